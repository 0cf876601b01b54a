"""Dumps, for many code objects, the raw line table and the line CPython itself gives for
every bytecode offset, for tests/unit/test_linetable.c.

Output, one record per code object:
    C <firstlineno> <table hex or -> <bytecode length>
    O <offset> <PyCode_Addr2Line> <dis.findlinestarts (3.8/3.9) / co_lines (3.10+) or x>
    ...
and a last line "END <number of code objects>".
"""
import ctypes
import dis
import sys

SOURCE = '''
import os

def simple(a, b):
    c = a + b
    return c * 2

def loops(n):
    total = 0
    for i in range(n):
        if i % 3 == 0:
            continue
        while total < i:
            total += 1
        else:
            total -= 1
    return total

def multiline(a,
              b):
    x = (a +
         b *
         a)
    y = func_call(
        a,
        b,
        key=x,
    )
    return [
        x,
        y,
    ]

def handlers(path):
    try:
        f = open(path)
    except (OSError, ValueError) as e:
        print(e)
        raise
    else:
        return f.read()
    finally:
        print("done")

def comprehensions(xs):
    a = [x * 2 for x in xs if x]
    b = {x: x for x in xs}
    c = {x for x in xs}
    d = (x for x in xs)
    e = lambda q: q + 1
    return a, b, c, list(d), e

def gap(a):
    a += 1
''' + "\n" * 300 + '''
    a += 2
''' + "\n" * 130 + '''
    a += 3
    return a
''' + "\n" * 200 + '''
def back_and_forth(a):
    return (a
''' + "\n" * 140 + '''
        + a)

def long_line(a):
    r = [''' + ", ".join("a" for _ in range(400)) + ''']
    return r

def long_jump(a):
    for i in range(10):
        if a:
''' + "".join("            a = a + %d * i\n" % k for k in range(120)) + '''
    return a

class Klass:
    attr = 1

    def method(self):
        with open(os.devnull) as f:
            assert f, "no file"
        return self.attr

    async def coro(self, other):
        async with other as o:
            async for v in o:
                await v
        return o

@staticmethod
def decorated(
    a,
):
    del a
    global G
    G = 1
    yield from range(3)
''' + "\n" * 70000 + '''
def far_away():
    x = 1
    return x
'''


def codes(co):
    yield co
    for c in co.co_consts:
        if hasattr(c, "co_code"):
            yield from codes(c)


def main():
    addr2line = ctypes.pythonapi.PyCode_Addr2Line
    addr2line.argtypes = [ctypes.py_object, ctypes.c_int]
    addr2line.restype = ctypes.c_int
    roots = [compile(SOURCE, "<linetable test>", "exec")]
    for mod in ("asyncio.base_events", "dis", "typing", "email._header_value_parser"):
        m = __import__(mod, fromlist=["_"])
        with open(m.__file__, encoding="utf-8") as f:
            roots.append(compile(f.read(), m.__file__, "exec"))
    pep626 = sys.version_info >= (3, 10)
    n = 0
    for root in roots:
        for co in codes(root):
            table = co.co_linetable if pep626 else co.co_lnotab
            ncode = len(co.co_code)
            alt = {}
            if pep626:
                for start, end, line in co.co_lines():
                    for off in range(start, end):
                        alt[off] = -1 if line is None else line
            else:
                starts = sorted(dis.findlinestarts(co))
                for i, (start, line) in enumerate(starts):
                    end = starts[i + 1][0] if i + 1 < len(starts) else ncode + 4
                    for off in range(start, end):
                        alt[off] = line
            print("C %d %s %d" % (co.co_firstlineno, table.hex() or "-", ncode))
            for off in range(-1, ncode + 4):
                a = alt.get(off, -1 if pep626 and off >= 0 else None)
                print("O %d %d %s" % (off, addr2line(co, off), "x" if a is None else a))
            n += 1
    print("END %d" % n)


main()
