print("swiftmoq")
