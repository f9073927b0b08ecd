"""Engines that run a listing's tasks: thin optional extras over the tasks of
:func:`ddbkeys.partition_keys.plan_listing`, each importable only with its engine installed
(``pip install 'ddbkeys[spark]'``, ``pip install 'ddbkeys[dask]'``). The engine schedules, places
and retries the tasks; ddbkeys only says what one task reads."""
