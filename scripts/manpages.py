#!/usr/bin/env python3
"""Ferry's manual pages, made from what the programs and the shipped configuration say.

    python3 scripts/manpages.py BINDIR OUTDIR

ferry(1): `ferry --help` and every subcommand's `--help` (a section FERRY NAME for each entry of
the help's SUBCOMMANDS list); ferryd(1): `ferryd --help`; both with an EXIT STATUS section made
from the exit statuses their help text lists ("Exit statuses: 0 ...; 64 ..." or "Exit codes: 0
..., 1 ..."), and the build fails when that text is missing or does not parse. ferry.conf(5): the
comments of etc/ferry/ferry.conf, the file the package ships as /etc/ferry/ferry.conf, so the
manual and the file never disagree. Used by the package (debian/rules) and `make build`.
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


def conf_page():
    """ferry.conf(5): every comment block of the shipped file, in order, with the settings it
    documents; commented-out example sections as examples."""
    with open(os.path.join(ROOT, "etc", "ferry", "ferry.conf"), encoding="utf-8") as f:
        lines = f.read().split("\n")
    body = [".SH DESCRIPTION",
            "ferryd(1) and ferry(1) read /etc/ferry/ferry.conf (or /etc/ferry/NAME.conf for the instance "
            "ferryd@NAME). It has one [ferry] section and a [store NAME] section per store; each key is written "
            "KEY = VALUE. What follows is the shipped file, whose comments document every key and its default.",
            ".SH \"THE SHIPPED FILE\"", ".nf"]
    body.append(roff("\n".join(lines).rstrip("\n")))
    body += [".fi", ".SH FILES", "/etc/ferry/ferry.conf, /etc/ferry/credentials/ (secrets for LoadCredential=), "
             "/var/lib/ferry/ferry.db (the replica)", ".SH \"SEE ALSO\"", "ferry(1), ferryd(1), systemd.exec(5)"]
    return page("ferry.conf", "5", "configuration of the Ferry sync daemon", body)


def main():
    bindir, outdir = sys.argv[1], sys.argv[2]
    os.makedirs(outdir, exist_ok=True)
    ferry, ferryd = os.path.join(bindir, "ferry"), os.path.join(bindir, "ferryd")
    pages = {"ferry.1": command_page(ferry, "ferry", subcommand_names(ferry)),
             "ferryd.1": command_page(ferryd, "ferryd"),
             "ferry.conf.5": conf_page()}
    for file, text in pages.items():
        with open(os.path.join(outdir, file), "w", encoding="utf-8") as f:
            f.write(text)
        print("wrote", os.path.join(outdir, file))


if __name__ == "__main__":
    main()
