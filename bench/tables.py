"""The report's tables: figures formatted, a table as text or markdown, a command's medians,
and the ratio of ours to a peer against its target."""


def fmt_s(x):
    return '-' if x is None else (f'{x:.3f}' if x < 10 else f'{x:.2f}')


def fmt_mib(kib):
    return '-' if kib is None else f'{kib / 1024:.1f}'


class Table:
    def __init__(self, title, header, note=None):
        self.title, self.header, self.rows, self.note = title, header, [], note

    def add(self, *row):
        self.rows.append([str(c) for c in row])

    def text(self, markdown):
        if markdown:
            out = [f'### {self.title}', '', '| ' + ' | '.join(self.header) + ' |',
                   '|' + '|'.join('---' for _ in self.header) + '|']
            out += ['| ' + ' | '.join(c.replace('|', '\\|') for c in r) + ' |' for r in self.rows]
            if self.note:
                out += ['', self.note]
            return '\n'.join(out) + '\n'
        widths = [max(len(h), *(len(r[i]) for r in self.rows)) if self.rows else len(h)
                  for i, h in enumerate(self.header)]
        line = lambda cells: '  '.join(c.ljust(w) for c, w in zip(cells, widths)).rstrip()
        out = [self.title, '=' * len(self.title), line(self.header), line(['-' * w for w in widths])]
        out += [line(r) for r in self.rows]
        if self.note:
            out += [self.note]
        return '\n'.join(out) + '\n'


def command_table(title, cmds):
    t = Table(title, ['command', 'runs', 'median s', 'min s', 'max s', 'CPU s', 'peak RSS MiB',
                      'foreign load', 'output lines', 'failures'])
    for c in cmds:
        walls = [r[0] for r in c.results]
        t.add(c.label, len(c.results), fmt_s(c.median(0)), fmt_s(min(walls) if walls else None),
              fmt_s(max(walls) if walls else None), fmt_s(c.median(1)), fmt_mib(c.median(2)),
              '-' if c.median(3) is None else f'{c.median(3):.2f}',
              '-' if c.out_lines is None else c.out_lines,
              len(c.failures) and f'{len(c.failures)} ({c.failures[0][:60]})' or 0)
    return t


def verdict(ratio, target):
    if ratio is None:
        return 'n/a'
    return 'met' if ratio <= target else 'NOT met'


def ratio_row(t, ours, peer, target, metric=0, fmt=fmt_s, missing=None):
    """Add 'ours / peer' to ``t``: medians of ``metric`` (0 wall, 2 peak RSS)."""
    if peer is None:
        t.add(ours.label, missing or 'missing', fmt(ours.median(metric)), '-', '-', '-',
              f'<= {target}' if target else '-', 'peer missing')
        return
    a, b = ours.median(metric), peer.median(metric)
    r = a / b if a is not None and b else None
    cpu = ours.median(1) / peer.median(1) if metric == 0 and r is not None and peer.median(1) else None
    t.add(ours.label, peer.label, fmt(a), fmt(b), '-' if r is None else f'{r:.2f}x',
          '-' if cpu is None else f'{cpu:.2f}x',
          f'<= {target}x' if target else '(info)', verdict(r, target) if target else '-')

