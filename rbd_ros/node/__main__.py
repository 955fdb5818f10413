from rbd_ros.node.main import main

main()
