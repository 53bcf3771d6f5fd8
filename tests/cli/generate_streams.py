"""`headlab generate` streams: each token reaches a reader while the command still runs.

    python3 generate_streams.py HEADLAB CHECKPOINT

Generates 1000 tokens (under 4 kB of output, less than one stdout buffer) through a pipe and counts
the reads that bring data. Flushed per token, the ids arrive in many reads while the model works;
buffered, they would all come in one or two reads (the prompt, then everything at exit).
"""
import os
import subprocess
import sys

headlab, checkpoint = sys.argv[1], sys.argv[2]
proc = subprocess.Popen([headlab, "generate", "--checkpoint", checkpoint, "--prompt-ids", "1 2 3",
                         "--max-new-tokens", "1000", "--seed", "3"], stdout=subprocess.PIPE)
reads, data = 0, b""
while True:
    chunk = os.read(proc.stdout.fileno(), 65536)
    if not chunk:
        break
    reads += 1
    data += chunk
status = proc.wait()
tokens = data.split()
print("exit status %d, %d bytes, %d tokens, %d reads" % (status, len(data), len(tokens), reads))
if status != 0 or len(tokens) != 1003 or not data.endswith(b"\n") or len(data) >= 4096:
    sys.exit("unexpected output")
if reads < 5:
    sys.exit("the tokens came in %d reads: not streamed" % reads)
print("STREAMED")
