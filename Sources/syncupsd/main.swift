print("syncupsd")
