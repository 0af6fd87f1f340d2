# expect: load_error
# Takes memory until none is left: RLIMIT_AS stops it with a MemoryError.
chunks = []
while True:
    chunks.append(bytearray(64 << 20))
