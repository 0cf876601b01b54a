"""Target process for tests/unit/test_symbolize.c. Compiles one source under file names
in every str representation (ASCII, latin-1, UCS-2, UCS-4, a lone surrogate, one too
long to keep whole), prints what the symbolizer must find for every code object, then
sleeps inside a known function until killed.

Output:
    VERSION <sys.hexversion> <id(types.CodeType)>
    CODE <id> <firstlineno> <id(co_filename)> <id(co_name)> <qualname> <filename> <table>
        (qualname and filename as the UTF-8 hex py_str_read must return, table as hex)
    L <byte offset> <PyCode_Addr2Line>      for every instruction of the code above
    FRAME <id(code)> <f_lasti> <f_lineno>   the sleeping frame
    READY
"""
import ctypes
import sys
import time
import types

STR_MAX = 4096

SOURCE = '''
import sys
import time


def sleeper(report):
    frame = sys._getframe(); report(frame)
    time.sleep(600)


class Klass:
    def m\u00e9thode(self):
        def inner_\u0444\u0443\u043d\u043a\u0446\u0438\u044f():
            return [x
                    for x in range(3)]
        return inner_\u0444\u0443\u043d\u043a\u0446\u0438\u044f

''' + "\n" * 300 + '''
def \U00020000_f(x):
    y = (x
         + 1)
    return y
'''

FILENAMES = [
    "/srv/app/ascii.py",
    "/srv/caf\u00e9/latin1.py",
    "/srv/\u043f\u0440\u0438\u043b\u043e\u0436\u0435\u043d\u0438\u0435/ucs2.py",
    "/srv/\U0001f600/ucs4.py",
    "/srv/\udcff/surrogate.py",
    "/srv/" + "d" * 5000 + "\u00e9.py",
]


def expect(s):
    """The UTF-8 the symbolizer must produce: at most STR_MAX characters, then "...",
    with U+FFFD for what UTF-8 cannot carry."""
    cut = len(s) > STR_MAX
    s = "".join("\ufffd" if "\ud800" <= c <= "\udfff" or c == "\0" else c
                for c in s[:STR_MAX])
    return (s.encode("utf-8") + (b"..." if cut else b"")).hex()


def codes(co):
    yield co
    for c in co.co_consts:
        if isinstance(c, types.CodeType):
            yield from codes(c)


def main():
    addr2line = ctypes.pythonapi.PyCode_Addr2Line
    addr2line.argtypes = [ctypes.py_object, ctypes.c_int]
    addr2line.restype = ctypes.c_int
    keep = []
    print("VERSION %d %d" % (sys.hexversion, id(types.CodeType)))
    for fn in FILENAMES:
        module = compile(SOURCE, fn, "exec")
        ns = {"__name__": "target"}
        exec(module, ns)
        keep.append((module, ns))
        for co in codes(module):
            qualname = getattr(co, "co_qualname", co.co_name)
            table = co.co_linetable if sys.version_info >= (3, 10) else co.co_lnotab
            print("CODE %d %d %d %d %s %s %s" % (
                id(co), co.co_firstlineno, id(co.co_filename), id(co.co_name),
                expect(qualname), expect(co.co_filename), table.hex() or "-"))
            for off in range(0, len(co.co_code), 2):
                print("L %d %d" % (off, addr2line(co, off)))

    def report(frame):
        print("FRAME %d %d %d" % (id(frame.f_code), frame.f_lasti, frame.f_lineno))
        print("READY", flush=True)

    keep[0][1]["sleeper"](report)


main()
