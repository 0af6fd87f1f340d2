# expect: load_error
# Leaves a daemon in a session of its own (its command line names this file), then fails.
import subprocess

subprocess.Popen(["sh", "-c", "sleep 300", __file__], start_new_session=True)
raise RuntimeError("left a daemon behind")
