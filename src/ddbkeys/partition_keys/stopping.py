"""(Moved to :mod:`ddbkeys.core.stopping`; kept so that old imports go on working.)"""

from ddbkeys.core.stopping import STOP_SLICE, StopFlag

__all__ = ["STOP_SLICE", "StopFlag"]
