"""``python -m rbd_ros.demo``: the closed-loop demo (``run.py``)."""
import sys

from rbd_ros.demo.run import main

sys.exit(main())
