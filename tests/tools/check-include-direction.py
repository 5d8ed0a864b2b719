#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""Fails when an #include points against the architecture's dependency direction.

The allowed edges are not written here: they are the table "Which room may include which" in
docs/architecture.md, so the document a newcomer reads and the rule the suite enforces cannot drift
apart. A room is a folder of core/ (core/pickle), or one of the top-level libraries and programs
(ui, torchbridge, app, tests, bench, fuzz). Inside ui/, each folder is a room too (ui/models, ui/widgets,
and `ui` for the files directly in ui/): what one may include of the others is the table "Which ui/
room may include which" of the same document, and what any of them may include outside ui/ is the
`ui` row of the first table. Both tables must be acyclic (no room may reach itself through the rooms
it includes: core/safety may not include core/triage, which includes it).
Besides the tables, three rules hold everywhere:
  - core/ includes no Qt header and no libtorch header (it is shared by the CLI and the GUI);
  - only torchbridge/ includes libtorch headers (torch/, ATen/, c10/);
  - a room's own headers may always be included from inside it.

Usage: check-include-direction.py [REPOSITORY_ROOT]   (exit 0 clean, 1 violations, 2 bad table)
"""
import os
import re
import sys

INCLUDE = re.compile(r'^\s*#\s*include\s*([<"])([^>"]+)[>"]', re.M)
QT_HEADER = re.compile(r'^Q[A-Z]\w*$|^Qt[A-Z]\w*/')
TORCH_HEADER = re.compile(r'^(torch|ATen|c10|caffe2)/')
SOURCE_SUFFIXES = ('.h', '.hpp', '.cpp', '.cc')
TOP_LEVEL_ROOMS = ('ui', 'torchbridge', 'app', 'tests', 'bench', 'fuzz')


def read_table(root):
    """Parses the rows `| room | may include |` of docs/architecture.md."""
    path = os.path.join(root, 'docs', 'architecture.md')
    table = {}
    in_table = False
    with open(path, encoding='utf-8') as f:
        for line in f:
            if line.startswith('## ') and 'may include' in line.lower():
                in_table = True
                continue
            if in_table and line.startswith('## '):
                break
            if not in_table or not line.startswith('|'):
                continue
            cells = [c.strip() for c in line.strip().strip('|').split('|')]
            if len(cells) < 2 or cells[0] in ('room', '') or set(cells[0]) <= set('-: '):
                continue
            room = cells[0].strip('`')
            allowed = [a.strip().strip('`') for a in cells[1].split(',') if a.strip() and a.strip() != '—']
            table[room] = set(allowed)
    if not table:
        print(f'{path}: no "may include" table found', file=sys.stderr)
        sys.exit(2)
    return table


def table_cycles(table):
    """Every room that the table lets reach itself again (core/safety -> core/triage -> core/safety):
    an arrow back up would make the direction meaningless, so the table itself must stay acyclic."""
    cycles = []
    for start in sorted(table):
        stack, seen = [(start, [start])], set()
        while stack:
            room, path = stack.pop()
            for target in sorted(table.get(room, ())):
                if target == start:
                    cycles.append(' -> '.join(path + [target]))
                    stack.clear()
                    break
                if target not in seen:
                    seen.add(target)
                    stack.append((target, path + [target]))
    return cycles


def read_ui_table(root):
    """Parses the rows `| ui room | may include |` of the table under the heading that names
    "which ui/ room may include which"."""
    path = os.path.join(root, 'docs', 'architecture.md')
    table = {}
    in_table = False
    with open(path, encoding='utf-8') as f:
        for line in f:
            if line.startswith('#'):
                heading = line.lower().replace('`', '')
                in_table = 'which ui/ room may include' in heading or 'which ui room may include' in heading
                continue
            if not in_table or not line.startswith('|'):
                continue
            cells = [c.strip() for c in line.strip().strip('|').split('|')]
            if len(cells) < 2 or cells[0] in ('room', '') or set(cells[0]) <= set('-: '):
                continue
            room = cells[0].strip('`').rstrip('/')
            allowed = [a.strip().strip('`').rstrip('/') for a in cells[1].split(',') if a.strip() and a.strip() != '—']
            table[room] = set(allowed)
    if not table:
        print(f'{path}: no "which ui/ room may include which" table found', file=sys.stderr)
        sys.exit(2)
    return table


def room_of(relative_path):
    parts = relative_path.split('/')
    if parts[0] == 'core' and len(parts) >= 3:
        return 'core/' + parts[1]
    if parts[0] == 'ui' and len(parts) >= 3:
        return 'ui/' + parts[1]
    if parts[0] in TOP_LEVEL_ROOMS:
        return parts[0]
    return None


def room_of_include(target):
    parts = target.split('/')
    if parts[0] == 'core' and len(parts) >= 3:
        return 'core/' + parts[1]
    if parts[0] == 'ui' and len(parts) >= 3:
        return 'ui/' + parts[1]
    if parts[0] in TOP_LEVEL_ROOMS and len(parts) >= 2:
        return parts[0]
    return None


def main():
    root = os.path.abspath(sys.argv[1] if len(sys.argv) > 1 else os.path.join(os.path.dirname(__file__), '..', '..'))
    table = read_table(root)
    ui_table = read_ui_table(root)
    violations = [f'docs/architecture.md: the table lets a room include itself again: {cycle}'
                  for cycle in table_cycles(table) + table_cycles(ui_table)]
    for top in ('core',) + TOP_LEVEL_ROOMS:
        for directory, subdirs, files in os.walk(os.path.join(root, top)):
            subdirs[:] = [d for d in subdirs if d not in ('build', '.git')]
            for name in files:
                if not name.endswith(SOURCE_SUFFIXES):
                    continue
                path = os.path.join(directory, name)
                relative = os.path.relpath(path, root)
                room = room_of(relative)
                if room is None:
                    violations.append(f'{relative}: a source file outside every room (core/<room>/ or a top-level library)')
                    continue
                outer_room = 'ui' if room.startswith('ui/') else room  # its row in the first table
                if outer_room not in table:
                    violations.append(f'{relative}: room {room} is missing from the table in docs/architecture.md')
                    continue
                if outer_room == 'ui' and room not in ui_table:
                    violations.append(f'{relative}: room {room} is missing from the ui/ rooms table in docs/architecture.md')
                    continue
                with open(path, encoding='utf-8', errors='replace') as f:
                    text = f.read()
                for match in INCLUDE.finditer(text):
                    kind, target = match.group(1), match.group(2)
                    line = text.count('\n', 0, match.start()) + 1
                    where = f'{relative}:{line}'
                    if room.startswith('core/') and (QT_HEADER.match(target) or target.startswith('Qt')):
                        violations.append(f'{where}: core must not include Qt ({target})')
                    if room != 'torchbridge' and TORCH_HEADER.match(target):
                        violations.append(f'{where}: only torchbridge may include libtorch ({target})')
                    if kind != '"':
                        continue
                    target_room = room_of_include(target)
                    if target_room is None:
                        if '/' not in target and room.startswith('core/'):
                            violations.append(f'{where}: include "{target}" is not folder-qualified (core/<room>/...)')
                        continue
                    if target_room == room:
                        continue
                    if outer_room == 'ui' and (target_room == 'ui' or target_room.startswith('ui/')):
                        if target_room not in ui_table[room]:
                            violations.append(f'{where}: {room} includes {target} from {target_room}, which the '
                                              f'ui/ rooms table of docs/architecture.md does not let it depend on')
                        continue
                    if target_room.startswith('ui/'):
                        target_room = 'ui'  # outside ui/, ui is one room
                    if target_room not in table[outer_room]:
                        violations.append(f'{where}: {room} includes {target} from {target_room}, '
                                          f'which docs/architecture.md does not let it depend on')
    for violation in violations:
        print(violation)
    print(f'include direction: {len(violations)} violation(s)')
    sys.exit(1 if violations else 0)


if __name__ == '__main__':
    main()
