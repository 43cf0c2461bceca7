print("syncupsctl")
