// syncupsctl: the command-line client. Everything but this line lives in SyncUpsClient.

import Glibc
import SyncUpsClient
import SyncUpsPOSIX

exit(Syncupsctl(environment: Subprocess.currentEnvironment()).run(Array(CommandLine.arguments.dropFirst())).rawValue)
