package main

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"io"
	"slices"
	"strings"
)

// Shell completion: `outpost completion bash|zsh|fish` prints a script that
// asks the binary itself (`outpost __complete WORDS... CURRENT`) for the
// candidates, so that it never falls behind the commands and flags: they
// are read from the same usage text --help prints.

// completionShells are the shells `outpost completion` knows, with their
// scripts.
var completionShells = []struct{ name, script string }{
	{"bash", `# bash completion for outpost: source <(outpost completion bash)
_outpost() {
    local IFS=$'\n'
    COMPREPLY=($(outpost __complete "${COMP_WORDS[@]:1:COMP_CWORD}" 2>/dev/null))
}
complete -o default -F _outpost outpost
`},
	{"zsh", `#compdef outpost
# zsh completion for outpost: source <(outpost completion zsh), after compinit
_outpost() {
    local -a cands
    cands=("${(@f)$(outpost __complete "${(@)words[2,CURRENT]}" 2>/dev/null)}")
    if (( ${#cands} )) && [[ -n ${cands[1]} ]]; then
        compadd -- "${cands[@]}"
    else
        _files
    fi
}
if [ "$funcstack[1]" = "_outpost" ]; then
    _outpost "$@"
else
    compdef _outpost outpost
fi
`},
	{"fish", `# fish completion for outpost: outpost completion fish | source
function __outpost_complete
    set -l cands (outpost __complete (commandline -opc)[2..-1] (commandline -ct) 2>/dev/null)
    if test (count $cands) -gt 0
        printf '%s\n' $cands
    else
        __fish_complete_path (commandline -ct)
    end
end
complete -c outpost -f -a '(__outpost_complete)'
`},
}

func runCompletion(_ context.Context, args []string, stdout, stderr io.Writer) error {
	fs := newFlags("completion", "bash|zsh|fish", stderr)
	fs.Usage = func() {
		fmt.Fprintln(stderr, "usage: outpost completion bash|zsh|fish\n\ncommands:")
		for _, s := range completionShells {
			fmt.Fprintf(stderr, "  %-7s %s\n", s.name, strings.SplitN(s.script, "\n", 2)[0][2:])
		}
	}
	if err := fs.Parse(args); err != nil {
		return err
	}
	if err := exactly(fs, 1, "a shell: bash, zsh or fish"); err != nil {
		return err
	}
	i := slices.IndexFunc(completionShells, func(s struct{ name, script string }) bool { return s.name == fs.Arg(0) })
	if i < 0 {
		return fmt.Errorf("no completion for %q: want bash, zsh or fish", fs.Arg(0))
	}
	_, err := io.WriteString(stdout, completionShells[i].script)
	return err
}

// complete prints the candidates for the last of words (the word being
// typed, maybe empty), one a line: commands, subcommands or flags. It
// prints nothing where a file name or a value goes, and the shell falls
// back to file names.
func complete(words []string, stdout io.Writer) {
	if len(words) == 0 {
		words = []string{""}
	}
	cur, prev := words[len(words)-1], words[:len(words)-1]
	path := commandPath(prev)
	var cands []string
	switch {
	case strings.HasPrefix(cur, "-"):
		if len(path) == 0 {
			cands = []string{"--help", "--version"}
			break
		}
		cands = helpFlags(path)
	case len(path) == len(prev) && (len(path) == 0 || len(path) == 1 && len(subcommands(path[0])) > 0):
		if len(path) == 0 {
			cands = topCommands()
		} else {
			cands = subcommands(path[0])
		}
	}
	for _, c := range cands {
		if strings.HasPrefix(c, cur) {
			fmt.Fprintln(stdout, c)
		}
	}
}

// commandPath is the command and subcommand named at the start of words,
// e.g. [fs put] of "fs put -r a b".
func commandPath(words []string) []string {
	if len(words) == 0 || !slices.Contains(topCommands(), words[0]) {
		return nil
	}
	if len(words) > 1 && slices.Contains(subcommands(words[0]), words[1]) {
		return words[:2]
	}
	return words[:1]
}

// topCommands are the names of outpost's commands.
func topCommands() []string {
	var names []string
	for n := range commands() {
		names = append(names, n)
	}
	slices.Sort(names)
	return names
}

// subcommands are the commands of group cmd, from its usage.
func subcommands(cmd string) []string {
	var names []string
	inCommands := false
	sc := bufio.NewScanner(bytes.NewReader(helpText([]string{cmd})))
	for sc.Scan() {
		line := sc.Text()
		switch {
		case line == "commands:":
			inCommands = true
		case inCommands && strings.HasPrefix(line, "  "):
			names = append(names, strings.Fields(line)[0])
		case inCommands:
			inCommands = false
		}
	}
	return names
}

// helpFlags are the flags of the command at path, from its --help, with
// two dashes.
func helpFlags(path []string) []string {
	var flags []string
	sc := bufio.NewScanner(bytes.NewReader(helpText(path)))
	for sc.Scan() {
		if f, ok := strings.CutPrefix(sc.Text(), "  -"); ok && f != "" && f[0] != ' ' {
			flags = append(flags, "--"+strings.Fields(f)[0])
		}
	}
	return append(flags, "--help")
}

// helpText runs the command at path with --help and returns what it
// printed. path holds only command names, so that nothing runs: flag
// parsing would stop at a positional argument and leave --help to it.
func helpText(path []string) []byte {
	cmd, ok := commands()[path[0]]
	if !ok {
		return nil
	}
	var out bytes.Buffer
	_ = cmd.run(context.Background(), append(slices.Clone(path[1:]), "--help"), &out, &out)
	return out.Bytes()
}
