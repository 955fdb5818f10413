import sys

from rbd_ros.sim.driver import main

sys.exit(main())
