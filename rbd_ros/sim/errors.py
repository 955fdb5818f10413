"""The sim's model error (no ROS here)."""
import rbd_ros.core as rbd


class SimModelError(rbd.ModelError):
    """The URDF cannot be simulated as the rbd_ros model (names the joint, link or constraint)."""
