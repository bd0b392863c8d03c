#!/usr/bin/env python3
"""Ferry's manual pages, made from what the programs and the shipped configuration say.

    python3 scripts/manpages.py BINDIR OUTDIR

ferry(1): `ferry --help` and every subcommand's `--help` (one SUBCOMMANDS section each);
ferryd(1): `ferryd --help`; ferry.conf(5): the comments of etc/ferry/ferry.conf, the file the
package ships as /etc/ferry/ferry.conf, so the manual and the file never disagree.
"""
import os
import re
import subprocess
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
DATE = "2026-11-27"


def roff(text):
    """Plain text made safe for roff: backslashes, leading dots and quotes."""
    text = text.replace("\\", "\\e")
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
            ".SH NAME", "%s \\- %s" % (name, roff(summary))]
    return "\n".join(head + body) + "\n"


def command_page(binary, name, subcommands=()):
    parts = sections(help_text(binary))
    overview = " ".join(dict(parts).get("OVERVIEW", name).split("\n\n")[0].split())
    body = []
    for title, text in parts:
        if title == "OVERVIEW":
            body += [".SH DESCRIPTION", ".nf", roff(text), ".fi"]
        elif title == "USAGE":
            body += [".SH SYNOPSIS", ".nf", roff(text.strip()), ".fi"]
        else:
            body += [".SH " + title, ".nf", roff(text), ".fi"]
    for sub in subcommands:
        body += [".SH \"%s %s\"" % (name.upper(), sub.upper()), ".nf", roff(help_text(binary, sub)), ".fi"]
    body += [".SH \"SEE ALSO\"", "ferry(1), ferryd(1), ferry.conf(5), systemctl(1), journalctl(1)"]
    return page(name, "1", overview, body)


def subcommand_names(binary):
    text = dict(sections(help_text(binary))).get("SUBCOMMANDS", "")
    return [m.group(1) for m in re.finditer(r"^\s+([a-z][a-z-]*)\b", text, re.M) if m.group(1) != "help"]


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
