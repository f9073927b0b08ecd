"""Decisions without I/O: what every strategy and listing method decides, apart from sending.

A strategy's work is a *flow*: a generator that yields the steps it needs (a
:class:`~ddbkeys._core.steps.Request` to send, a :class:`~ddbkeys._core.steps.Pause` to wait)
and is sent back what each step gave: a response, or the error the request raised (thrown into
the flow, so a flow reads ``ConditionalCheckFailedException`` where it sent the request). The
flow returns its result. Only a driver (:mod:`ddbkeys._drivers.sync` over a boto3 client,
:mod:`ddbkeys._drivers.aio` over an aiobotocore client) sends, sleeps, keeps each request
inside its deadline and counts capacity; the same flow runs under either.

The retry layer (:func:`ddbkeys._core.attempts.attempts`) is itself a flow: which failure is
worth another attempt, how long to wait and when to give up are decided once, for both drivers
and for every strategy and listing method.
"""
