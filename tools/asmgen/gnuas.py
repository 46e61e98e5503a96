"""Encodes instructions Go's assembler does not know (VDPBF16PS) as Go
BYTE directives, with GNU as (binutils) and objdump."""
import os
import re
import subprocess
import tempfile

_obj = os.path.join(tempfile.mkdtemp(), "t.o")
_enc = {}


def encode(att):
    """The BYTE directives of the AT&T-syntax instruction att, e.g.
    'vdpbf16ps %zmm1, %zmm2, %zmm3' (cached)."""
    if att not in _enc:
        subprocess.run(['as', '-o', _obj, '-'], input=(att + '\n').encode(), check=True)
        out = subprocess.run(['objdump', '-d', _obj], capture_output=True, check=True).stdout.decode()
        hexes = []
        for line in out.splitlines():
            m = re.match(r'\s+[0-9a-f]+:\t([0-9a-f ]+)', line)
            if m:
                hexes += m.group(1).split()
        _enc[att] = '; '.join('BYTE $0x%s' % h for h in hexes)
    return _enc[att]
