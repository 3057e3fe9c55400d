import CNgtcp2

func _probe() { _ = ngtcp2_version(0) }
