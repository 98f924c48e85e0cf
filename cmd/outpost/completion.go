package main

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"io"
	"slices"
	"strings"
	"time"
)

// Shell completion: `outpost completion bash|zsh|fish` prints a script that
// asks the binary itself (`outpost __complete WORDS... CURRENT`) for the
// candidates, so that it never falls behind the commands and flags: they
// are read from the same usage text --help prints. The values of --agent
// and --session are the workspace's, listed from the control plane.

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
	case len(prev) > 0 && valueOf(prev[len(prev)-1]) != "":
		cands = remoteNames(valueOf(prev[len(prev)-1]))
	case strings.HasPrefix(cur, "-"):
		if len(path) == 0 {
			cands = []string{"--help", "--version"}
			break
		}
		cands = helpFlags(path)
	case len(path) == len(prev) && argKind(path) != "":
		cands = remoteNames(argKind(path))
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

// valueOf says which names complete the value of flag: "agent" for
// --agent, "session" for --session, "" for any other.
func valueOf(flag string) string {
	switch flag {
	case "-agent", "--agent":
		return "agent"
	case "-session", "--session":
		return "session"
	}
	return ""
}

// argKind says which names complete the positional arguments of the
// command at path: agents for `agents rm`, sessions for `session show`,
// `swap` and `delete`.
func argKind(path []string) string {
	switch strings.Join(path, " ") {
	case "agents rm":
		return "agent"
	case "session show", "session swap", "session delete":
		return "session"
	}
	return ""
}

// remoteNames lists the workspace's agents or sessions for completion,
// with the control plane the environment or the current context names;
// nothing when it cannot be reached within a second.
func remoteNames(kind string) []string {
	var cf clientFlags
	cl, err := cf.client()
	if err != nil {
		return nil
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	var names []string
	switch kind {
	case "agent":
		agents, err := cl.ListAgents(ctx, cf.workspace)
		if err != nil {
			return nil
		}
		for _, a := range agents {
			names = append(names, a.ID)
		}
	case "session":
		sessions, err := cl.ListSessions(ctx, cf.workspace)
		if err != nil {
			return nil
		}
		for _, s := range sessions {
			names = append(names, s.ID)
		}
	}
	slices.Sort(names)
	return names
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
