"""Engines that run a listing's tasks: thin optional extras over
:mod:`ddbkeys.partition_keys._tasks.tasks`, each importable only with its engine installed
(``pip install 'ddbkeys[spark]'``, ``pip install 'ddbkeys[dask]'``). The engine schedules, places
and retries the tasks; ddbkeys only says what one task reads."""
