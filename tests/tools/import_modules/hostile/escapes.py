# expect: load_error
# Tries to write beside itself (outside its worker's directory) with open() and os.system, then
# reports who it ran as, where, with which environment and descriptors, in its error.
import os

here = os.path.dirname(os.path.abspath(__file__))
try:
    with open(os.path.join(here, "written_by_open.txt"), "w") as f:
        f.write("escaped")
except OSError:
    pass
os.system(f"touch {here}/written_by_system.txt 2>/dev/null; echo from-os-system")
print("x" * 1_000_000)  # output past the importer's cap
raise RuntimeError(f"uid={os.getuid()} cwd={os.getcwd()} env={','.join(sorted(os.environ))} "
                   f"home={os.environ.get('HOME')} fds={','.join(sorted(os.listdir('/proc/self/fd')))}")
