#!/usr/bin/env python3
"""Ferry's manual pages, made from what the programs and the shipped configuration say.

    python3 scripts/manpages.py BINDIR OUTDIR

ferry(1): `ferry --help` and every subcommand's `--help` (a section FERRY NAME for each entry of
the help's SUBCOMMANDS list); ferryd(1): `ferryd --help`; both with an EXIT STATUS section made
from the exit statuses their help text lists ("Exit statuses: 0 ...; 64 ..." or "Exit codes: 0
..., 1 ..."), and the build fails when that text is missing or does not parse. ferry.conf(5): what the
comments of etc/ferry/ferry.conf say of each key, the file the package ships as /etc/ferry/ferry.conf, so the
manual and the file never disagree: one entry per key the configuration reader takes (`ferry
check-config --list-keys`), by section, and the build fails for a key the file does not describe. Used by the package (debian/rules) and `make build`.
Checked by Tests/System/package-test.sh (subcommands once each, EXIT STATUS, no groff warnings).
"""
import os
import re
import subprocess
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
DATE = "2026-11-27"


def roff(text):
    """Plain text made safe for roff: backslashes, leading dots and quotes, and characters
    beyond ASCII as groff's \\[uXXXX] (a page read without preconv renders them too)."""
    text = text.replace("\\", "\\e")
    text = "".join(c if ord(c) < 128 else "\\[u%04X]" % ord(c) for c in text)
    return "\n".join(("\\&" + line) if line.startswith((".", "'")) else line for line in text.split("\n"))


def help_text(binary, *args):
    out = subprocess.run([binary, *args, "--help"], capture_output=True, text=True, check=True).stdout
    return out.rstrip("\n")


def sections(help_output):
    """ArgumentParser's help: OVERVIEW, USAGE, ARGUMENTS, OPTIONS, SUBCOMMANDS... as a list."""
    parts, name, lines = [], None, []
    for line in help_output.split("\n"):
        match = re.match(r"^([A-Z][A-Z ]+):\s*(.*)$", line)
        if match and not line.startswith(" "):
            if name is not None:
                parts.append((name, "\n".join(lines).strip("\n")))
            name, lines = match.group(1), [match.group(2)] if match.group(2) else []
        else:
            lines.append(line)
    if name is not None:
        parts.append((name, "\n".join(lines).strip("\n")))
    return parts


def page(name, section, summary, body):
    head = ['.TH "%s" "%s" "%s" "Ferry" "Ferry manual"' % (name.upper(), section, DATE),
            ".nh", ".SH NAME", "%s \\- %s" % (name, roff(summary))]
    return "\n".join(head + body) + "\n"


def filled(text):
    """Prose paragraphs (blank-line separated, wrapped by ArgumentParser) as filled roff."""
    body = []
    for paragraph in re.split(r"\n\s*\n", text.strip()):
        if paragraph.strip():
            body += [".PP", roff(" ".join(paragraph.split()))]
    return body


# "Exit statuses: 0 stopped by a signal; 64 usage; ...; 1 anything else." (ferryd) or "Exit
# codes: 0 ok, 1 a pass or reload failed, ..." (ferry): from the label to the end of its
# paragraph, one "STATUS meaning" per item, items separated by ";" or "," before a number (not
# inside parentheses: "75 another process is syncing the store (nothing done; try again)").
EXIT_TEXT = re.compile(r"Exit (?:statuses|status|codes):\s*(.*?)\.?\s*(?:\n\s*\n|\Z)", re.S)


def exit_statuses(overview):
    """The overview without its exit-status text, and [(status, meaning)] from that text."""
    match = EXIT_TEXT.search(overview)
    if not match:
        return overview, []
    text, items, depth, start = " ".join(match.group(1).split()), [], 0, 0
    for i, char in enumerate(text):  # split at "; N" and ", N" outside parentheses
        depth += {"(": 1, ")": -1}.get(char, 0)
        if char in ";," and depth == 0 and re.match(r"[;,]\s+\d+\s", text[i:]):
            items.append(text[start:i])
            start = i + 1
    items.append(text[start:])
    table = []
    for item in items:
        entry = re.fullmatch(r"(\d+)\s+(.+)", item.strip())
        if not entry:
            sys.exit("manpages.py: cannot read the exit status %r in %r" % (item, match.group(0)))
        table.append((entry.group(1), entry.group(2)))
    rest = overview[:match.start()].rstrip(" ") + ("\n\n" if match.group(0).endswith("\n") else "") + overview[match.end():]
    return rest, table


def exit_section(table):
    body = ['.SH "EXIT STATUS"']
    for status, meaning in table:
        body += [".TP", ".B " + status, roff(meaning[0].upper() + meaning[1:] + ".")]
    return body


def command_page(binary, name, subcommands=()):
    parts = dict(sections(help_text(binary)))
    overview, statuses = exit_statuses(parts.get("OVERVIEW", name))
    if not statuses:
        sys.exit("manpages.py: `%s --help` lists no exit statuses (\"Exit statuses: 0 ...; 1 ...\")" % name)
    summary = " ".join(overview.split("\n\n")[0].split())
    body = [".SH SYNOPSIS", ".nf", roff(parts.get("USAGE", name).strip()), ".fi",
            ".SH DESCRIPTION"] + filled(overview)
    for title, text in parts.items():
        if title not in ("OVERVIEW", "USAGE"):
            body += [".SH " + title, ".nf", roff(text), ".fi"]
    for sub in subcommands:
        body += [".SH \"%s %s\"" % (name.upper(), sub.upper()), ".nf", roff(help_text(binary, sub)), ".fi"]
    body += exit_section(statuses)
    body += [".SH \"SEE ALSO\"", "ferry(1), ferryd(1), ferry.conf(5), systemctl(1), journalctl(1)"]
    return page(name, "1", summary, body)


def subcommand_names(binary):
    """The entries of the help's SUBCOMMANDS list: a name (marked "(default)" maybe) at the
    list's indentation, its description beside it or, when the name is long, on the next
    line, wrapped lines indented further. Not "help" (ArgumentParser's, shown nowhere) nor the
    closing "See 'ferry help <subcommand>' ..." line."""
    text = dict(sections(help_text(binary))).get("SUBCOMMANDS", "")
    lines = [line for line in text.split("\n") if line.strip()]
    if not lines:
        return []
    indent = min(len(line) - len(line.lstrip(" ")) for line in lines)
    names = []
    for line in lines:
        entry = re.match(r"^ {%d}([a-z][a-z0-9-]*)(?: \(default\))?(?:\s{2,}|$)" % indent, line)
        if entry and entry.group(1) != "help" and entry.group(1) not in names:
            names.append(entry.group(1))
    return names


SETTING = re.compile(r"^#{0,2}\s?([a-z][a-z0-9-]*(?:\.[A-Za-z0-9_.-]+)?) = ?(.*)$")
TABLE_ROW = re.compile(r"^#\s{3}([a-z][a-z0-9.-]*[a-z0-9])\s{2,}(\S.*)$")
DEFAULT_ROW = re.compile(r"^#\s{3}([a-z][a-z0-9.-]*[a-z0-9]) = (\S+)\s{2,}(\S.*)$")
TABLE_MORE = re.compile(r"^#\s{5,}(\S.*)$")


def conf_descriptions(lines):
    """What the shipped file says of each key: a table row (`#   key   what it does`, with its
    indented continuation lines), else the comment block above the key's first setting line
    (past the setting lines that share it), else the first comment line that names it; and
    the value its first setting line shows (the default, where it is commented out)."""
    said, shown = {}, {}
    for number, line in enumerate(lines):
        # The table of the keys every store takes: `#   key = default   what it does`.
        row = DEFAULT_ROW.match(line)
        if row and row.group(1) not in said:
            text = [row.group(3)]
            for more in lines[number + 1:]:
                cont = TABLE_MORE.match(more)
                if not cont or DEFAULT_ROW.match(more) or TABLE_ROW.match(more):
                    break
                text.append(cont.group(1))
            said[row.group(1)] = " ".join(text)
            shown[row.group(1)] = row.group(2)
    for number, line in enumerate(lines):
        row = TABLE_ROW.match(line)
        if row and row.group(1) not in said:
            text = [row.group(2)]
            for more in lines[number + 1:]:
                cont = TABLE_MORE.match(more)
                if not cont or TABLE_ROW.match(more):
                    break
                text.append(cont.group(1))
            said[row.group(1)] = " ".join(text)
    for number, line in enumerate(lines):
        setting = SETTING.match(line)
        if not setting or line.startswith("#   "):
            continue
        key = setting.group(1)
        shown.setdefault(key, setting.group(2))
        if key in said:
            continue
        block, back = [], number - 1
        while back >= 0 and SETTING.match(lines[back]) and not lines[back].startswith("#   "):
            back -= 1
        # A plain comment block only: an indented one is another key's table.
        while (back >= 0 and lines[back].startswith("#") and not SETTING.match(lines[back]) and not lines[back].startswith("#[")
               and not re.match(r"^#{1,2}\s{2,}", lines[back])):
            block.insert(0, lines[back].lstrip("#").strip())
            back -= 1
        if block:
            said[key] = " ".join(block)
    return said, shown


def conf_page(binary):
    """ferry.conf(5): one entry per key the configuration reader takes (`ferry check-config
    --list-keys`, from its key tables), by section, each with what the shipped file says of
    it and the value it shows; the build fails for a key the file does not describe."""
    with open(os.path.join(ROOT, "etc", "ferry", "ferry.conf"), encoding="utf-8") as f:
        lines = f.read().split("\n")
    said, shown = conf_descriptions(lines)
    listed = subprocess.run([binary, "check-config", "--list-keys"], capture_output=True, text=True, check=True).stdout
    keys = [row.split("\t", 1) for row in listed.strip("\n").split("\n") if "\t" in row]
    body = [".SH DESCRIPTION",
            "ferryd(1) and ferry(1) read /etc/ferry/ferry.conf (or /etc/ferry/NAME.conf for the instance "
            "ferryd@NAME). It has one [ferry] section and a [store NAME] section per store; each key is written "
            "KEY = VALUE on a line of its own, and a line starting with # or ; is a comment. Durations are written "
            "250ms, 30s, 5m, 2h, 1d (or combined: 1h30m); sizes in bytes or 512KiB, 256MiB, 1MB. Unknown keys, "
            "unknown sections and repeated keys are errors: ferry check-config lists every problem with file, "
            "line and key. A problem in one store's section fails that store alone; any other refuses the file.",
            "Secrets are never written inline: credential:NAME (systemd LoadCredential=NAME:PATH) or file:PATH "
            "(a file only its owner may read)."]
    missing, section = [], None
    for where, key in keys:
        if where != section:
            section = where
            body.append(".SH \"%s\"" % roff(where.upper()))
        text = said.get(key)
        if text is None:
            mention = next((l.lstrip("#").strip() for l in lines if l.startswith("#") and re.search(r"(?<![a-z-])%s(?![a-z-])" % re.escape(key), l)), None)
            if mention is None:
                missing.append(key)
                continue
            text = mention
        value = shown.get(key)
        body += [".TP", "\\fB%s\\fR = %s" % (roff(key), roff(value) if value else "VALUE")]
        body += [roff(text)]
    if missing:
        sys.exit("manpages.py: etc/ferry/ferry.conf does not describe %s" % ", ".join(missing))
    body += [".SH FILES", "/etc/ferry/ferry.conf, /etc/ferry/credentials/ (secrets for LoadCredential=), "
             "/var/lib/ferry/ferry.db (the replica); the shipped file has a commented example of every kind",
             ".SH \"SEE ALSO\"", "ferry(1), ferryd(1), systemd.exec(5)"]
    return page("ferry.conf", "5", "configuration of the Ferry sync daemon", body)


def main():
    bindir, outdir = sys.argv[1], sys.argv[2]
    os.makedirs(outdir, exist_ok=True)
    ferry, ferryd = os.path.join(bindir, "ferry"), os.path.join(bindir, "ferryd")
    pages = {"ferry.1": command_page(ferry, "ferry", subcommand_names(ferry)),
             "ferryd.1": command_page(ferryd, "ferryd"),
             "ferry.conf.5": conf_page(ferry)}
    for file, text in pages.items():
        with open(os.path.join(outdir, file), "w", encoding="utf-8") as f:
            f.write(text)
        print("wrote", os.path.join(outdir, file))


if __name__ == "__main__":
    main()
