"""``python -m ddbkeys``: the same as the ``ddbkeys`` command."""

from ddbkeys._cli import main

if __name__ == "__main__":
    main()
