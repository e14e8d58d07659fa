import sys

from benchmarks.maskbench.cli import main

if __name__ == "__main__":
    sys.exit(main())
