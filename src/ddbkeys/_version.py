"""ddbkeys' version (also ``ddbkeys.__version__``): a module of its own, so that what needs it
(the user agent, ``--version``) imports nothing else of the package."""

__all__ = ["__version__"]

__version__ = "1.0.0"
