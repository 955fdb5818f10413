"""MuJoCo as a physically simulated robot (``rbd_ros[sim]``): the model loader
(:mod:`rbd_ros.sim.mujoco_model`, no ROS) and the driver node
(:mod:`rbd_ros.sim.driver`)."""
