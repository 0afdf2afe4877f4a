"""What a hostile case fills in the modules it runs, put back before the next case in the same child.

Why: a fresh child started each case with the runner's module state; a long-lived child would
otherwise start a case with what earlier ones cached: a compiled pattern (the 100,000-character
patterns are compiled once per case, not once per child), a memo of smem's, a global a case
set.  Nothing here changes a verdict (bench/hostile_compare.py shows it), but a case's time and
peak would no longer be its own.  Put back: smem's module globals and the dicts, lists and sets
they hold, the pattern caches of re and regex, urllib's; an lru_cache anywhere that was empty is
emptied again, and one that was not (its old entries cannot be put back) retires the child.
"""

import functools
import sys
import types

#: Stdlib and extra modules' caches, put back as they were: (module, attribute).
CACHES = (("re", "_cache"), ("regex._main", "_cache"), ("regex._main", "_locale_sensitive"),
          ("regex._main", "_named_args"))


def lru_caches():
    """Every functools.lru_cache of a loaded module, at module or class level (found once, by the
    runner before it forks: a scan of every module costs more than a case)."""
    found, seen = [], set()
    for module in list(sys.modules.values()):
        scope = getattr(module, "__dict__", None)
        if not isinstance(scope, dict):
            continue
        values = list(scope.values())
        values += [v for c in values if isinstance(c, type) and c.__module__ == module.__name__
                   for v in c.__dict__.values()]
        for value in values:
            if isinstance(value, (staticmethod, classmethod)):
                value = value.__func__
            if isinstance(value, functools._lru_cache_wrapper) and id(value) not in seen:
                seen.add(id(value))
                found.append(value)
    return found


class Memo:
    """The module state at the child's start; :meth:`restore` puts it back after a case."""

    def __init__(self, caches):
        self.caches = [(cache, cache.cache_info().currsize) for cache in caches]
        self.modules = []
        for name, module in list(sys.modules.items()):
            if (name == "smem" or name.startswith("smem.")) and isinstance(module, types.ModuleType):
                scope = module.__dict__
                self.modules.append((scope, dict(scope), _identity(scope),
                                     [(v, _copy(v), _identity(v)) for k, v in scope.items()
                                      if type(v) in (dict, list, set) and k != "__builtins__"]))
        self.stdlib = []
        for name, attribute in CACHES:
            cache = getattr(sys.modules.get(name), attribute, None)
            if isinstance(cache, dict):
                self.stdlib.append((cache, dict(cache)))

    def restore(self):
        """Put it back; the reasons it cannot be (the child then retires), or none."""
        reasons = []
        for cache, size in self.caches:
            if cache.cache_info().currsize != size:
                if size:
                    reasons.append(f"{cache.__qualname__}'s cache cannot be put back")
                else:
                    cache.cache_clear()
        for scope, saved, identity, containers in self.modules:
            if _identity(scope) != identity:
                scope.clear()
                scope.update(saved)
            for container, content, identity in containers:
                if _identity(container) != identity:
                    container.clear()
                    (container.update if type(container) is not list else container.extend)(content)
        for cache, saved in self.stdlib:
            if cache.keys() != saved.keys():
                cache.clear()
                cache.update(saved)
        return reasons


def _copy(container):
    return type(container)(container)


def _identity(container):
    """What a dict, list or set holds, as its items' identities (an array's == is no truth value),
    in a form compared at C speed: a case runs in about the time a slower check would take."""
    if type(container) is dict:
        return list(container), list(map(id, container.values()))
    if type(container) is list:
        return list(map(id, container))
    return set(map(id, container))
