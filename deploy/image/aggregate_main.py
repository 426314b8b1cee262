"""spark-submit's main file for the aggregation job: the driver runs exactly
``ksmon aggregate`` with the arguments the SparkApplication gives (``--config FILE``).

spark-submit needs a ``.py`` file as the application; the ``ksmon`` console script
is not one, so this file stands in for it inside the job image.
"""

import sys

from agent.cli import main

if __name__ == "__main__":
    sys.exit(main(["aggregate", *sys.argv[1:]]))
