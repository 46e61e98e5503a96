#!/usr/bin/env python3
"""Generates the BF16x16Z decode kernels (bf16zG4AVX512, bf16zG4R2AVX512 to
bf16zG4R4AVX512, bf16zG2R5AVX512 to bf16zG2R8AVX512) that end
engine/quant/bf16z_amd64.s: one to four activation rows against four
groups of the compressed layout, five to eight against two, each
128-column block expanded in registers once and multiplied at once, in
the BF16x16 decode kernels' order.

Go's assembler does not know VDPBF16PS, so each is written as BYTEs,
encoded by GNU as (binutils) and read back with objdump. Run from the
repository root and replace the file's block from the line "// The
BF16x16Z decode kernels" to its end with the output:

    python3 tools/asmgen/bf16z.py > /tmp/bf16z.s
"""
from gnuas import encode

def vdp_bcast(dst, src1, disp, row=0):
    """VDPBF16PS Z(dst) += Z(src1) . broadcast(disp + activation row's address) as BYTEs."""
    mem_as, mem_go = ROWADDR[row]
    enc = encode('vdpbf16ps %d%s{1to16}, %%zmm%d, %%zmm%d' % (disp, mem_as, src1, dst))
    return '\t%s // VDPBF16PS %d%s{1to16}, Z%d, Z%d\n' % (enc, disp, mem_go, src1, dst)


# Activation rows 0-7: SI, SI+astride, SI+2·astride, R8 = SI+3·astride,
# R8+astride, R8+2·astride, R9 = SI+6·astride, R9+astride.
ROWADDR = [('(%rsi)', '(SI)'), ('(%rsi,%rax,1)', '(SI)(AX*1)'), ('(%rsi,%rax,2)', '(SI)(AX*2)'),
           ('(%r8)', '(R8)'), ('(%r8,%rax,1)', '(R8)(AX*1)'), ('(%r8,%rax,2)', '(R8)(AX*2)'),
           ('(%r9)', '(R9)'), ('(%r9,%rax,1)', '(R9)(AX*1)')]
def expand_run(gi, base, t):
    """Group gi's run at base, prefetched PFZ ahead and expanded: its four
    column pairs of 16 rows in Z(t+4)..Z(t+7) (Z(t)..Z(t+3) temporaries),
    with the sub-block's table in Z(24+gi)."""
    o = []
    for line in range(3):
        o.append('\tPREFETCHT0 PFZ+%s\n' % g(gi, base + 64 * line))
    o.append('\tVMOVDQU64 %s, Z%d\n' % (g(gi, base + 128), t))
    o.append('\tVPSRLW $4, Z%d, Z%d\n' % (t, t + 1))
    o.append('\tVPANDQ Z30, Z%d, Z%d\n' % (t, t))
    o.append('\tVPANDQ Z30, Z%d, Z%d\n' % (t + 1, t + 1))
    o.append('\tVPSHUFB Z%d, Z%d, Z%d\n' % (t, 24 + gi, t))
    o.append('\tVPSHUFB Z%d, Z%d, Z%d\n' % (t + 1, 24 + gi, t + 1))
    o.append('\tVMOVDQU64 %s, Z%d\n' % (g(gi, base), t + 2))
    o.append('\tVMOVDQU64 %s, Z%d\n' % (g(gi, base + 64), t + 3))
    o.append('\tVPUNPCKLBW Z%d, Z%d, Z%d\n' % (t, t + 2, t + 4))
    o.append('\tVPUNPCKHBW Z%d, Z%d, Z%d\n' % (t, t + 2, t + 5))
    o.append('\tVPUNPCKLBW Z%d, Z%d, Z%d\n' % (t + 1, t + 3, t + 6))
    o.append('\tVPUNPCKHBW Z%d, Z%d, Z%d\n' % (t + 1, t + 3, t + 7))
    return ''.join(o)


GADDR = ['(DI)', '(DI)(R11*1)', '(DI)(R11*2)', '(R12)']


def g(i, off):
    return '%d%s' % (off, GADDR[i])


def kernel(R, G):
    """The kernel of R activation rows against G groups: four groups for 1
    to 4 rows, two for 5 to 8 (four groups' accumulators would not fit)."""
    if R == 1:
        name, lbl = 'bf16zG4AVX512', 'bf16zg4'
    else:
        name, lbl = 'bf16zG%dR%dAVX512' % (G, R), 'bf16zg%dr%d' % (G, R)
    tmp = 'R9' if G == 4 else 'R12'  # R12 holds group 3 with four groups, R9 row 6 with two
    o = []
    if R == 1:
        o.append('// func bf16zG4AVX512(nb int, w *byte, gstride int, a *byte, dst *float32, accumulate bool) (done int)\n')
        o.append('// One activation row against four consecutive groups (gstride bytes apart)\n')
        o.append('// of up to nb BF16x16Z blocks, stopping before the first block with patches\n')
        o.append('// in any group (done: the blocks multiplied). Each run of each group is\n')
        o.append('// expanded in registers (as bf16zExpandAVX512 does) and its four column\n')
        o.append('// pairs multiplied at once, so that accumulator Z(g) takes group g\'s pairs\n')
        o.append('// in column order: the chains of bf16x16G4AVX512 on the expanded bytes.\n')
        o.append('// Registers: Z0-Z3 accumulators, Z24-Z27 the four groups\' tables of the\n')
        o.append('// sub-block, Z8-Z15 and Z16-Z23 two groups\' runs at a time.\n')
        o.append('TEXT ·%s(SB), NOSPLIT, $0-56\n' % name)
    elif G == 4:
        o.append('// func %s(nb int, w *byte, gstride int, a *byte, astride int, dst *float32, dstride int, accumulate bool) (done int)\n' % name)
        o.append('// bf16zG4AVX512 for %d activation rows (astride bytes apart): accumulator\n' % R)
        o.append('// Z(4r+g) for row r and group g, whose 16 outputs go to dst[r·dstride+16g:],\n')
        o.append('// each run expanded once for all the rows. Each chain is the R1 kernel\'s.\n')
        o.append('TEXT ·%s(SB), NOSPLIT, $0-72\n' % name)
    else:
        o.append('// func %s(nb int, w *byte, gstride int, a *byte, astride int, dst *float32, dstride int, accumulate bool) (done int)\n' % name)
        o.append('// %d activation rows (astride bytes apart) against two consecutive groups\n' % R)
        o.append('// (gstride bytes apart): accumulator Z(2r+g) for row r and group g, whose 16\n')
        o.append('// outputs go to dst[r·dstride+16g:], each run expanded once for all the rows\n')
        o.append('// (two groups leave registers for up to eight rows\' accumulators). Each chain\n')
        o.append('// is the R1 kernel\'s; blocks with patches stop it as there.\n')
        o.append('TEXT ·%s(SB), NOSPLIT, $0-72\n' % name)
    o.append('\tMOVQ nb+0(FP), CX\n\tMOVQ CX, R13\n\tMOVQ w+8(FP), DI\n\tMOVQ gstride+16(FP), R11\n')
    if G == 4:
        o.append('\tLEAQ (DI)(R11*2), R12\n\tADDQ R11, R12 // group 3\n')
    if R == 1:
        o.append('\tMOVQ a+24(FP), SI\n\tMOVQ dst+32(FP), DX\n')
    else:
        o.append('\tMOVQ a+24(FP), SI\n\tMOVQ astride+32(FP), AX\n')
        if R >= 4:
            o.append('\tLEAQ (AX)(AX*2), R8\n\tADDQ SI, R8 // row 3\n')
        if R >= 7:
            o.append('\tLEAQ (R8)(AX*2), R9\n\tADDQ AX, R9 // row 6\n')
        o.append('\tMOVQ dst+40(FP), DX\n\tMOVQ dstride+48(FP), R10\n\tSHLQ $2, R10\n')
    o.append('\tMOVL $0x0f0f0f0f, BX\n\tVPBROADCASTD BX, Z30\n')
    o.append('\tMOVQ $0x8080808080808080, BX\n\tMOVQ $0xaa, %s\n\tKMOVQ %s, K1\n' % (tmp, tmp))
    o.append('\tVPXORQ Z31, Z31, Z31\n\tVPBROADCASTQ BX, K1, Z31 // 0x80 in qwords 1, 3, 5 and 7\n')
    acc = 'accumulate+40(FP)' if R == 1 else 'accumulate+56(FP)'
    o.append('\tMOVBQZX %s, %s\n\tTESTQ %s, %s\n\tJNZ %sload\n' % (acc, tmp, tmp, tmp, lbl))
    for z in range(G * R):
        o.append('\tVPXORD Z%d, Z%d, Z%d\n' % (z, z, z))
    o.append('\tJMP %sloop\n%sload:\n\tMOVQ DX, %s\n' % (lbl, lbl, tmp))
    for r in range(R):
        if r:
            o.append('\tADDQ R10, %s\n' % tmp)
        for gi in range(G):
            o.append('\tVMOVUPS %d(%s), Z%d\n' % (64 * gi, tmp, G * r + gi))
    o.append('%sloop:\n' % lbl)
    o.append('\tMOVBLZX 32(DI), %s\n\tMOVBLZX 32(DI)(R11*1), BX\n\tORL BX, %s\n' % (tmp, tmp))
    if G == 4:
        o.append('\tMOVBLZX 32(DI)(R11*2), BX\n\tORL BX, R9\n\tMOVBLZX 32(R12), BX\n\tORL BX, R9\n')
    o.append('\tJNZ %sdone // patches: the caller expands this block\n' % lbl)
    for s in range(4):
        for gi in range(G):
            o.append('\tVPBROADCASTQ %s, Z%d\n' % (g(gi, 8 * s), 24 + gi))
            o.append('\tVPORQ Z31, Z%d, Z%d\n' % (24 + gi, 24 + gi))
        for j in range(4):
            base = 64 + 768 * s + 192 * j
            for gi in range(G):
                # temporaries Z(t)..Z(t+7): two sets in turn where the
                # accumulators leave room
                t = 16 if G * R > 8 or gi % 2 else 8
                o.append(expand_run(gi, base, t))
                for z in range(4):
                    for r in range(R):
                        o.append(vdp_bcast(G * r + gi, t + 4 + z, 64 * s + 16 * j + 4 * z, r))
    o.append('\tADDQ $3136, DI\n')
    if G == 4:
        o.append('\tADDQ $3136, R12\n')
    o.append('\tADDQ $256, SI\n')
    if R >= 4:
        o.append('\tADDQ $256, R8\n')
    if R >= 7:
        o.append('\tADDQ $256, R9\n')
    o.append('\tDECQ CX\n\tJNZ %sloop\n' % lbl)
    ret = 'done+48(FP)' if R == 1 else 'done+64(FP)'
    o.append('%sdone:\n\tSUBQ CX, R13\n\tMOVQ R13, %s\n' % (lbl, ret))
    if R == 1:
        for z in range(4):
            o.append('\tVMOVUPS Z%d, %d(DX)\n' % (z, 64 * z))
    else:
        for r in range(R):
            if r:
                o.append('\tADDQ R10, DX\n')
            for gi in range(G):
                o.append('\tVMOVUPS Z%d, %d(DX)\n' % (G * r + gi, 64 * gi))
    o.append('\tVZEROUPPER\n\tRET\n')
    return ''.join(o)


print('// The BF16x16Z decode kernels, generated by tools/asmgen/bf16z.py.\n')
for R in range(1, 9):
    print()
    print(kernel(R, 4 if R <= 4 else 2), end='')
