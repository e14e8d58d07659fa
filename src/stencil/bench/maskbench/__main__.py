import sys

from stencil.bench.maskbench.cli import main

if __name__ == "__main__":
    sys.exit(main())
