"""Target process for tests/unit/test_objmodel.c: builds objects of every kind the object
model describes and an asyncio loop whose tasks are suspended in known await chains, then
prints what Python itself says about them (ids, sizes, values) and blocks the loop on
stdin while the test reads its memory.

Output, one fact per line, "KEY value...", integers in decimal:
    ... facts ...
    READY                 the test reads (the loop blocked inside Context.run); then
                          writes a line to stdin
    LAZYNAME <id(task)> <id(name)> <name>   after get_name() on an unnamed task
    READY                 the test reads again; closing stdin ends the process
"""
import asyncio
import contextvars
import functools
import gc
import sys
import threading
import types
import weakref

keep = []


def out(key, *vals):
    sys.stdout.write(key + "".join(" " + str(v) for v in vals) + "\n")


def int_digits(n):
    bits = sys.int_info.bits_per_digit
    a, ds = abs(n), []
    while a:
        ds.append(a & ((1 << bits) - 1))
        a >>= bits
    return ds


class Plain:
    marker = 1

    def __init__(self):
        self.attr_alpha = "alpha-value"
        self.attr_beta = 12345678


class Slotted:
    __slots__ = ("slot_x", "slot_y")

    def __init__(self):
        self.slot_x = "x-value"
        self.slot_y = ["y"]


def make_closure(arg):
    zeta, alpha, mid = "zeta-value", "alpha-value", "mid-value"

    def inner_closure(x):
        y = x  # a cell of its own (innermost's), and locals: not free variables

        def innermost():
            return y

        return mid, zeta, alpha, innermost, arg

    return inner_closure


def objects():
    d = {"key_one": "value_one", "key_two": "value_two", "key_three": "value_three"}
    out("DICT", id(d), len(d), *[v for k in d for v in (id(k), id(d[k]))])
    gd = {1: "one", (2, 3): "two-three"}  # not all str keys: a general table
    out("DICT", id(gd), len(gd), *[v for k in gd for v in (id(k), id(gd[k]))])

    p = Plain()  # its __dict__ is never touched: values stay split / inline
    out("PLAIN", id(p), id(Plain), Plain.__basicsize__, Plain.__dictoffset__,
        Plain.__flags__, id("attr_alpha"), id(p.attr_alpha), id("attr_beta"), id(p.attr_beta))
    tp_dict = [r for r in gc.get_referents(Plain) if type(r) is dict and "marker" in r]
    out("TYPE", id(Plain), id(Plain.__base__), id(tp_dict[0]) if len(tp_dict) == 1 else 0)
    out("TYPENAME", id(dict), "dict")
    out("TYPEINFO", id(dict), dict.__basicsize__, dict.__flags__, id(dict.__base__))
    out("TYPEINFO", id(int), int.__basicsize__, int.__flags__, id(int.__base__))
    out("TYPEINFO", id(bool), bool.__basicsize__, bool.__flags__, id(bool.__base__))
    out("TYPEINFO", id(str), str.__basicsize__, str.__flags__, id(str.__base__))
    s = Slotted()
    out("SLOTS", id(s), id(Slotted), "slot_x", id(s.slot_x), "slot_y", id(s.slot_y))

    t = ("tuple-a", 2, None)
    out("TUPLE", id(t), len(t), *[id(x) for x in t])
    li = ["list-a", 7, t]
    out("LIST", id(li), len(li), *[id(x) for x in li])
    st = {"set-a", "set-b", 99}
    out("SET", id(st), len(st), *[id(x) for x in st])
    fs = frozenset(["fs-a", 12, "fs-c", 13])
    out("SET", id(fs), len(fs), *[id(x) for x in fs])
    wr = weakref.ref(p)
    out("WEAKREF", id(wr), id(p))

    captured, other = "captured-value", ["captured", "list"]

    def closure():
        return captured, other

    cells = closure.__closure__
    out("FUNC", id(closure), id(closure.__code__), id(closure.__name__),
        id(closure.__qualname__), id(cells), *[id(c) for c in cells])
    out("CELLS", *[v for c in cells for v in (id(c), id(c.cell_contents))])

    # a closure over three variables, found by name: its code among make_closure's
    # constants, its free variables in closure order (Python's, whatever it is), each
    # with the object its cell holds ("<name>-value")
    inner = make_closure("arg-value")
    code = inner.__code__
    out("CLOSURE", id(make_closure.__code__), id(types.CodeType), id(tuple), id(inner),
        id(code), code.co_name, len(code.co_freevars),
        *[v for n, c in zip(code.co_freevars, inner.__closure__)
          for v in (n, id(c.cell_contents))])

    class WithMethod:
        def meth(self):
            pass

    inst = WithMethod()
    bm = inst.meth
    out("METHOD", id(bm), id(bm.__func__), id(bm.__self__))
    target = [1, 2]
    ap = target.append
    out("CMETHOD", id(ap), id(target), "append")
    part = functools.partial(max, 1, 2, key=abs)
    out("PARTIAL", id(part), id(part.func), id(part.args))
    ints = [5, 0, -3, 2 ** 100 + 12345, -(2 ** 65) - 7, 1 << 30]
    keep.append(ints)
    for n in ints:
        out("INT", id(n), 1 if n > 0 else -1 if n < 0 else 0, len(int_digits(n)),
            *int_digits(n))
    out("MODULE", id(sys.modules), id(functools), id(functools.__dict__))
    keep.extend([d, gd, p, s, t, li, st, fs, wr, closure, cells, bm, inst, ap, target, part,
                 inner])


# The suspended chains: each task ends in a future nobody completes.
chain = {}


async def inner_b(fut):
    return await fut


async def inner_a(fut):
    chain["b"] = b = inner_b(fut)
    return await b


async def outer(task):
    return await task


async def agen(fut):
    yield await fut


async def via_agen(fut):
    async for x in agen(fut):
        return x


async def wrapped(fut):
    return await fut


class AwaitWrapper:
    """__await__ hands out a coroutine's wrapper (coroutine_wrapper)."""

    def __init__(self, fut):
        self.fut = fut

    def __await__(self):
        chain["wrapper_coro"] = c = wrapped(self.fut)
        chain["wrapper"] = w = c.__await__()
        return w


async def via_wrapper(fut):
    return await AwaitWrapper(fut)


class AwaitGen:
    """__await__ is a generator function: the coroutine awaits a plain generator."""

    def __init__(self, fut):
        self.fut = fut

    def __await__(self):
        return (yield from self.fut.__await__())


async def via_gen(fut):
    return await AwaitGen(fut)


def frame_facts(key, coro):
    f = coro.cr_frame if hasattr(coro, "cr_frame") else coro.gi_frame
    code = coro.cr_code if hasattr(coro, "cr_code") else coro.gi_code
    out(key, id(coro), id(f), id(code), f.f_lasti, id(coro.__qualname__))


async def reporter():
    loop = asyncio.get_running_loop()
    fut = loop.create_future()
    inner = loop.create_task(inner_a(fut), name="inner-task")
    waiter = loop.create_task(outer(inner), name="outer-task")
    fut2, fut3, fut4 = loop.create_future(), loop.create_future(), loop.create_future()
    t_agen = loop.create_task(via_agen(fut2), name="agen-task")
    t_wrap = loop.create_task(via_wrapper(fut3), name="wrapper-task")
    t_gen = loop.create_task(via_gen(fut4), name="gen-task")
    lazy = loop.create_task(asyncio.sleep(3600))  # no name given
    for _ in range(5):
        await asyncio.sleep(0)

    done, cancelled = loop.create_future(), loop.create_future()
    done.set_result("done")
    cancelled.cancel()
    cb_fut = loop.create_future()

    def cb1(f):
        pass

    def cb2(f):
        pass

    cb_fut.add_done_callback(cb1)
    cb_fut.add_done_callback(cb2)
    fi = fut.__await__()
    keep.extend([fut, inner, waiter, fut2, fut3, fut4, t_agen, t_wrap, t_gen, lazy, done,
                 cancelled, cb_fut, fi, cb1, cb2])

    import _asyncio

    out("LOOP", id(loop), threading.get_ident(), id(_asyncio.Future), id(_asyncio.Task),
        _asyncio.Future.__basicsize__, _asyncio.Task.__basicsize__)
    ag = agen(fut)
    asend = ag.asend(None)
    out("TYPES", id(types.CoroutineType), id(types.GeneratorType), id(type(asend)),
        id(type(chain["wrapper"])), id(type(fi)), id(type(len)))
    out("FUTURE", id(fut), 0, id(loop))
    out("FUTURE", id(done), 2, id(loop))
    out("FUTURE", id(cancelled), 1, id(loop))
    cbs = cb_fut._callbacks
    out("CALLBACKS", id(cb_fut), id(cbs[0][0]), len(cbs) - 1, *[id(c[0]) for c in cbs[1:]])
    out("FUTUREITER", id(fi), id(fut))
    for t in (inner, waiter, t_agen, t_wrap, t_gen):
        out("TASK", id(t), id(t.get_coro()), id(t.get_name()), t.get_name())
    out("LAZY", id(lazy), id(lazy.get_coro()))
    out("AWAITS", id(waiter), id(inner))  # waiter's fut_waiter is inner
    wake = inner._callbacks[0][0]
    out("WAKEUP", id(inner), id(wake), id(waiter), id(getattr(wake, "__self__", None)),
        type(wake).__name__)

    # coroutine chains: the coroutine, the future its innermost awaits, then the code
    # objects of the walk, outermost first
    frame_facts("FRAME", inner.get_coro())
    frame_facts("FRAME", chain["b"])
    out("TOS", id(inner.get_coro()), id(chain["b"]))
    out("CHAIN", id(inner.get_coro()), id(fut), id(inner_a.__code__), id(inner_b.__code__))
    out("CHAIN", id(waiter.get_coro()), id(inner), id(outer.__code__))
    out("CHAIN", id(t_agen.get_coro()), id(fut2), id(via_agen.__code__), id(agen.__code__))
    out("CHAIN", id(t_wrap.get_coro()), id(fut3), id(via_wrapper.__code__),
        id(wrapped.__code__))
    out("CHAIN", id(t_gen.get_coro()), id(fut4), id(via_gen.__code__),
        id(AwaitGen.__await__.__code__))

    out("ASEND", id(asend), id(ag))
    out("COROWRAPPER", id(chain["wrapper"]), id(chain["wrapper_coro"]))
    # the suspended inner_a's first local slots: its argument, then its local b
    out("LOCALS", id(inner.get_coro()), id(fut), id(chain["b"]))
    out("VARNAMES", id(inner_a.__code__), id(tuple), *inner_a.__code__.co_varnames)
    keep.extend([ag, asend])
    # the rest runs in a Context of its own: the thread state's context is that one
    ctx = contextvars.copy_context()
    ctx.run(report_blocked, ctx, lazy)


request_id = contextvars.ContextVar("request_id")


def report_blocked(ctx, lazy):
    request_id.set("req-42")
    ty = type(ctx)  # tp_name "Context" in 3.8, "_contextvars.Context" from 3.9 on
    tp_name = ty.__name__ if ty.__module__ == "builtins" else ty.__module__ + "." + ty.__name__
    out("CONTEXT", threading.get_ident(), id(ctx), id(ty), tp_name)
    # the thread's innermost frame is this one: slot 0 is ctx
    out("RUNNING", id(report_blocked.__code__), id(ctx), id(lazy))
    out("VARNAMES", id(report_blocked.__code__), id(tuple),
        *report_blocked.__code__.co_varnames)
    out("READY")
    sys.stdout.flush()
    if not sys.stdin.readline():  # the loop stays blocked here while the test reads
        return
    name = lazy.get_name()
    out("LAZYNAME", id(lazy), id(lazy.get_name()), name)
    out("READY")
    sys.stdout.flush()
    sys.stdin.readline()
    sys.exit(0)


objects()
asyncio.run(reporter())
