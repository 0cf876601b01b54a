#!/bin/sh
# Lists the installed CPython interpreters, one resolved path per line: every pyenv
# version (pyenv root, $PYENV_ROOT, ~/.pyenv) and the system's /usr/bin/pythonX.Y.
roots=
command -v pyenv >/dev/null 2>&1 && roots=$(pyenv root 2>/dev/null)
roots="$roots ${PYENV_ROOT:-} ${HOME:-/root}/.pyenv"
{
	for r in $roots; do
		for p in "$r"/versions/*/bin/python[0-9].[0-9] "$r"/versions/*/bin/python[0-9].[0-9][0-9]; do
			[ -x "$p" ] && readlink -f "$p"
		done
	done
	for p in /usr/bin/python[0-9].[0-9] /usr/bin/python[0-9].[0-9][0-9]; do
		[ -x "$p" ] && readlink -f "$p"
	done
} | sort -u
