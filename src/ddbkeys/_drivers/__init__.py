"""The drivers: the only code that sends requests, sleeps, keeps each request inside its
deadline and counts capacity. :mod:`ddbkeys._drivers.sync` runs a flow on a boto3 client in the
caller's thread; :mod:`ddbkeys._drivers.aio` runs the same flow on an aiobotocore client in an
event loop. See :mod:`ddbkeys._core` for what a flow is."""
