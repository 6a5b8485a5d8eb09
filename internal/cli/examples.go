package cli

import (
	"strings"

	"github.com/spf13/cobra"
)

// examples are each command's help examples, by command path ("" is the
// root). They live here, apart from the commands, so that one place shows
// how airlock is used; TestEveryCommandHasExamples checks that every
// command has some and that each airlock line in them parses.
var examples = map[string]string{
	"": `  airlock run -- make generate          # commit if it exits 0, else discard
  airlock open --id fix-123             # or open, work in the staged path, then
  airlock diff fix-123 && airlock commit fix-123
  airlock init claude                   # Claude Code's worktrees become transactions`,
	"run": `  airlock run -- make generate
  airlock run --validate 'go test ./...' -- claude -p "fix the failing test"
  airlock run --backend overlay --protect 'migrations/' -- ./codemod.sh
  airlock run --json -- sh -c 'echo hi > hello.txt' | jq .outcome`,
	"open": `  airlock open --id fix-123             # prints the id and the staged path
  airlock open --workdir ~/src/project --backend worktree --json`,
	"commit": `  airlock commit fix-123
  airlock commit fix-123 --validate 'go test ./...'
  airlock commit fix-123 --approve      # it changes a protected path, on purpose
  airlock commit fix-123 --expect-digest "$(airlock show fix-123 --json | jq -r .diff_digest)"
  airlock commit fix-123 -- src/parser.go docs/   # only these; the rest stays open`,
	"discard": `  airlock discard fix-123`,
	"diff": `  airlock diff 20260301-101500-ab12
  airlock diff 20260301-101500-ab12 --stat
  airlock diff 20260301-101500-ab12 | git apply --binary --check   # does it apply?
  airlock diff 20260301-101500-ab12 --json | jq -r .text`,
	"show": `  airlock show 20260301-101500-ab12
  airlock show 20260301-101500-ab12 --json | jq -r .diff_digest`,
	"list": `  airlock list
  airlock list --all --json | jq -r '.[] | select(.status == "refused") | .id'`,
	"log": `  airlock log
  airlock log --workdir ~/src/project --json | jq -r '.entries[].tx'`,
	"undo": `  airlock undo                          # revert the newest commit to this directory
  airlock undo 20260301-101500-ab12     # revert that one
  airlock undo --approve --json         # it restored a protected path`,
	"land": `  airlock land agent-1 agent-2 agent-3 --validate 'go test ./...'
  airlock land agent-1 agent-2 --json | jq -r '.transactions[] | "\(.tx) \(.result.outcome // .error)"'`,
	"rebase": `  airlock rebase fix-123                # after a commit refused MergeConflict
  airlock rebase fix-123 --json | jq -r '.conflicts[]'`,
	"checkpoint": `  airlock checkpoint fix-123 -m "tests pass"   # prints its number
  airlock checkpoint fix-123 --json | jq .number`,
	"checkpoints": `  airlock checkpoints fix-123
  airlock checkpoints fix-123 --json | jq -r '.checkpoints[] | "\(.number) \(.message)"'`,
	"rewind": `  airlock rewind fix-123 2               # the staged workspace as it was at checkpoint 2
  airlock rewind fix-123 3               # undo that rewind: 3 is the checkpoint it took first`,
	"review": `  airlock review                        # the newest open or refused transaction here
  airlock review 20260301-101500-ab12 --no-browser --timeout 30m`,
	"recover": `  airlock recover                       # after a crash, in the base directory
  airlock recover --workdir ~/src/project --json
  airlock recover --workdir ~/src/project-moved --moved`,
	"gc": `  airlock gc                            # keeps settled ones for their grace (gc_keep, else 7 days)
  airlock gc --dry-run --older-than 0   # what would go now; which commits would lose their undo
  airlock gc --older-than 24h           # instead of each base's grace
  airlock gc 20260301-101500-ab12       # now, whatever its age; also a refused one, or an open one whose owner is gone`,
	"receipt": `  airlock receipt verify 20260301-101500-ab12
  airlock receipt verify --remote origin --branch main --json`,
	"receipt verify": `  airlock receipt verify 20260301-101500-ab12
  airlock receipt verify ./receipt.json --json`,
	"doctor": `  airlock doctor
  airlock doctor --workdir ~/src/project --json | jq '.checks[] | select(.name == "auto")'`,
	"init": `  airlock init claude                   # in the project's directory
  airlock init codex --workdir ~/src/project
  airlock init gemini`,
	"hook": `  # What airlock init writes into .claude/settings.json runs, for example:
  airlock hook claude worktree-create
  # Try one by hand with the JSON the agent would send:
  echo '{"session_id":"s1","cwd":"'"$PWD"'","hook_event_name":"SessionStart"}' | airlock hook claude session-start`,
	"mcp": `  claude mcp add airlock -- airlock mcp`,
	"completion": `  # bash (needs the bash-completion package), for this shell, then for good
  source <(airlock completion bash)
  airlock completion bash > ~/.local/share/bash-completion/completions/airlock

  # zsh and fish
  airlock completion zsh > "${fpath[1]}/_airlock"
  airlock completion fish > ~/.config/fish/completions/airlock.fish`,
	"version": `  airlock version
  airlock --version
  airlock version --json | jq -r .commit`,
}

// addExamples sets the examples of root's command tree.
func addExamples(root *cobra.Command) {
	var walk func(c *cobra.Command)
	walk = func(c *cobra.Command) {
		path := strings.TrimPrefix(strings.TrimPrefix(c.CommandPath(), root.Name()), " ")
		if e, ok := examples[path]; ok {
			c.Example = e
		}
		for _, sub := range c.Commands() {
			walk(sub)
		}
	}
	walk(root)
}
