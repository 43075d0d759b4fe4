package recipe

import (
	"fmt"
	"regexp"
	"slices"
	"strings"
)

// Slurm is the [slurm] table: how `uaxai slurm submit` asks Slurm for its
// jobs. Like [limits] it never changes a number a run computes, so no hash
// covers it (it is no part of ResultParts or FitParts). A zero field is
// unset: sbatch's (or the cluster's) default applies, except Shards and
// CPUsPerTask, whose defaults host/slurm chooses.
type Slurm struct {
	Shards      int      `json:"shards,omitempty"`        // explain array tasks (N); 0: host/slurm's default
	Partition   string   `json:"partition,omitempty"`     // --partition
	Time        string   `json:"time,omitempty"`          // --time, Slurm's format ("90", "1:30:00", "2-12")
	CPUsPerTask int      `json:"cpus_per_task,omitempty"` // --cpus-per-task, and the workers of each task; 0: 1
	Mem         string   `json:"mem,omitempty"`           // --mem ("4G", "500M"); "": not asked for
	Account     string   `json:"account,omitempty"`       // --account
	SbatchArgs  []string `json:"sbatch_args,omitempty"`   // further sbatch options, each one word: "--qos=long"
}

const (
	slurmTimeHelp = `Slurm's time format: "MINUTES", "MINUTES:SECONDS", "HOURS:MINUTES:SECONDS", "DAYS-HOURS", "DAYS-HOURS:MINUTES", "DAYS-HOURS:MINUTES:SECONDS", or "UNLIMITED"`
	slurmMemHelp  = `an integer with an optional unit K, M, G or T ("4G", "500M"; no unit: megabytes)`
	slurmNameHelp = `letters, digits and . _ - + (a partition may be a comma-separated list)`
)

var (
	slurmTimeRE = regexp.MustCompile(`^(?:[0-9]+(?::[0-9]+){0,2}|[0-9]+-[0-9]+(?::[0-9]+){0,2}|UNLIMITED|INFINITE)$`)
	slurmMemRE  = regexp.MustCompile(`^[0-9]+[KMGT]?$`)
	slurmPartRE = regexp.MustCompile(`^[A-Za-z0-9._+-]+(?:,[A-Za-z0-9._+-]+)*$`)
	slurmAcctRE = regexp.MustCompile(`^[A-Za-z0-9._+-]+$`)
)

// reservedSbatch are the sbatch options host/slurm sets itself: sbatch_args
// may not give them, since the jobs and their dependencies rest on them.
var reservedSbatch = []string{"--array", "--dependency", "--parsable", "--output", "--error", "--job-name", "--wrap", "--chdir",
	"--partition", "--time", "--cpus-per-task", "--mem", "--account"}

// reservedShort are the one-letter forms of reservedSbatch.
var reservedShort = map[string]string{"-a": "--array", "-d": "--dependency", "-o": "--output", "-e": "--error", "-J": "--job-name",
	"-D": "--chdir", "-p": "--partition", "-t": "--time", "-c": "--cpus-per-task", "-A": "--account"}

// CheckSlurmShards checks a value of shards.
func CheckSlurmShards(n int) error {
	if n < 1 {
		return fmt.Errorf("%d is less than 1 (accepted: the number of explain array tasks, >= 1)", n)
	}
	if n > MaxShards {
		return fmt.Errorf("%d is above the bound %d (accepted: 1..%d explain array tasks)", n, MaxShards, MaxShards)
	}
	return nil
}

// CheckSlurmCPUs checks a value of cpus_per_task.
func CheckSlurmCPUs(n int) error {
	if n < 1 {
		return fmt.Errorf("%d is less than 1 (accepted: the CPUs of each array task, >= 1)", n)
	}
	if n > MaxWorkers {
		return fmt.Errorf("%d is above the bound %d (accepted: 1..%d CPUs, the workers of each array task)", n, MaxWorkers, MaxWorkers)
	}
	return nil
}

// CheckSlurmTime checks a value of time.
func CheckSlurmTime(s string) error {
	if !slurmTimeRE.MatchString(s) {
		return fmt.Errorf("%q is not a Slurm time limit (accepted: %s)", s, slurmTimeHelp)
	}
	return nil
}

// CheckSlurmMem checks a value of mem.
func CheckSlurmMem(s string) error {
	if !slurmMemRE.MatchString(s) {
		return fmt.Errorf("%q is not a Slurm memory size (accepted: %s)", s, slurmMemHelp)
	}
	return nil
}

// CheckSlurmPartition checks a value of partition.
func CheckSlurmPartition(s string) error {
	if !slurmPartRE.MatchString(s) {
		return fmt.Errorf("%q is not a partition name (accepted: %s)", s, slurmNameHelp)
	}
	return nil
}

// CheckSlurmAccount checks a value of account.
func CheckSlurmAccount(s string) error {
	if !slurmAcctRE.MatchString(s) {
		return fmt.Errorf("%q is not an account name (accepted: letters, digits and . _ - +)", s)
	}
	return nil
}

// codeSbatch are the sbatch options that would let a recipe run code of
// its choosing in the jobs: --export-file sets the jobs' environment from
// a file (BASH_ENV, LD_PRELOAD, ...), --container runs them in an OCI
// bundle of the recipe's choosing. --export is checked on its own
// (exportHelp).
var codeSbatch = []string{"--export-file", "--container"}

// noArgShort are sbatch's one-letter options that take no argument: one
// of them followed by more letters is a cluster of options ("-Hp debug"
// is -H -p debug), which sbatch_args does not take.
const noArgShort = "hHIkOQsuvVW"

const exportHelp = `--export=ALL, --export=NONE, --export=NIL, or a list of names of variables of the submitting environment ("--export=ALL,HOME,SCRATCH"); no NAME=VALUE, which could set BASH_ENV, ENV, LD_PRELOAD, LD_LIBRARY_PATH, PATH or PYTHONSTARTUP and run code of the recipe's choosing in the jobs`

// exportNameRE is a variable name (of the submitting environment).
var exportNameRE = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*$`)

// longOption returns the sbatch option that name (a long option, "--x")
// stands for among opts: the one it is, else the first that it is a
// prefix of (sbatch takes a prefix of a long option for it, so "--dep" is
// --dependency), and "" if none.
func longOption(name string, opts []string) string {
	if len(name) <= 2 {
		return ""
	}
	for _, o := range opts {
		if name == o {
			return o
		}
	}
	for _, o := range opts {
		if strings.HasPrefix(o, name) {
			return o
		}
	}
	return ""
}

// CheckSbatchArg checks one element of sbatch_args: an option (it starts
// with "-"), one word, none of the options host/slurm sets itself (nor a
// prefix of one, which sbatch would take for it), and none that would let
// the recipe run code of its choosing in the jobs: --export with a
// NAME=VALUE (exportHelp), --export-file, --container.
func CheckSbatchArg(s string) error {
	if !strings.HasPrefix(s, "-") {
		return fmt.Errorf("%q is not an sbatch option (accepted: one option such as \"--qos=long\" or \"--gres=gpu:1\", starting with -)", s)
	}
	if strings.ContainsAny(s, " \t\n\r") {
		return fmt.Errorf("%q holds white space (accepted: one option per element, \"--qos=long\", not \"--qos long\")", s)
	}
	name, val, hasVal := strings.Cut(s, "=")
	if !strings.HasPrefix(name, "--") {
		if len(name) > 2 && strings.ContainsRune(noArgShort, rune(name[1])) {
			return fmt.Errorf("%q is a cluster of one-letter options (accepted: one option per element, \"-%c\" alone)", s, name[1])
		}
		if long, ok := reservedShort[name[:min(len(name), 2)]]; ok {
			name = long
		}
	}
	known := append(append([]string{"--export"}, reservedSbatch...), codeSbatch...)
	switch r := longOption(name, known); {
	case slices.Contains(reservedSbatch, r):
		return fmt.Errorf("%q sets %s, which uaxai sets itself (accepted: any other sbatch option; use the key or flag of its own for partition, time, cpus_per_task, mem, account)", s, r)
	case slices.Contains(codeSbatch, r):
		return fmt.Errorf("%q sets %s, which would let the recipe run code of its choosing in the jobs (accepted: any other sbatch option; for the environment, %s)", s, r, exportHelp)
	case r == "--export":
		if !hasVal {
			return fmt.Errorf("%q has no value (accepted: %s, in one element)", s, exportHelp)
		}
		for _, v := range strings.Split(val, ",") {
			if v != "ALL" && v != "NONE" && v != "NIL" && !exportNameRE.MatchString(v) {
				return fmt.Errorf("%q exports %q (accepted: %s)", s, v, exportHelp)
			}
		}
	}
	return nil
}

// Validate checks every set field of s, as the decoder of [slurm] does; the
// error names the key. Command-line flags that fill a Slurm are checked
// with it.
func (s Slurm) Validate() error {
	check := func(key string, err error) error {
		if err != nil {
			return fmt.Errorf("slurm %s: %w", key, err)
		}
		return nil
	}
	if s.Shards != 0 {
		if err := check("shards", CheckSlurmShards(s.Shards)); err != nil {
			return err
		}
	}
	if s.CPUsPerTask != 0 {
		if err := check("cpus_per_task", CheckSlurmCPUs(s.CPUsPerTask)); err != nil {
			return err
		}
	}
	for _, c := range []struct {
		key, v string
		f      func(string) error
	}{{"partition", s.Partition, CheckSlurmPartition}, {"time", s.Time, CheckSlurmTime}, {"mem", s.Mem, CheckSlurmMem}, {"account", s.Account, CheckSlurmAccount}} {
		if c.v != "" {
			if err := check(c.key, c.f(c.v)); err != nil {
				return err
			}
		}
	}
	for i, a := range s.SbatchArgs {
		if err := check(fmt.Sprintf("sbatch_args[%d]", i), CheckSbatchArg(a)); err != nil {
			return err
		}
	}
	return nil
}

func (d *decoder) slurm(v any) (*Slurm, error) {
	path := []string{"slurm"}
	tbl, err := d.asTable(v, path)
	if err != nil {
		return nil, err
	}
	s := &Slurm{}
	intKey := func(dst *int, check func(int) error) func(any, []string) error {
		return func(v any, p []string) error {
			if err := d.setInt(dst)(v, p); err != nil {
				return err
			}
			if err := check(*dst); err != nil {
				return d.keyErr(p, "%v", err)
			}
			return nil
		}
	}
	strKey := func(dst *string, check func(string) error) func(any, []string) error {
		return func(v any, p []string) error {
			if err := d.setString(dst)(v, p); err != nil {
				return err
			}
			if err := check(*dst); err != nil {
				return d.keyErr(p, "%v", err)
			}
			return nil
		}
	}
	err = d.table(tbl, path, []field{
		{"shards", intKey(&s.Shards, CheckSlurmShards)},
		{"partition", strKey(&s.Partition, CheckSlurmPartition)},
		{"time", strKey(&s.Time, CheckSlurmTime)},
		{"cpus_per_task", intKey(&s.CPUsPerTask, CheckSlurmCPUs)},
		{"mem", strKey(&s.Mem, CheckSlurmMem)},
		{"account", strKey(&s.Account, CheckSlurmAccount)},
		{"sbatch_args", func(v any, p []string) error {
			if err := d.setStrings(&s.SbatchArgs)(v, p); err != nil {
				return err
			}
			if len(s.SbatchArgs) == 0 {
				s.SbatchArgs = nil // as the canonical form, which leaves an empty list out
			}
			for i, a := range s.SbatchArgs {
				if err := CheckSbatchArg(a); err != nil {
					return d.keyErr(sub(p, fmt.Sprint(i)), "%v", err)
				}
			}
			return nil
		}},
	})
	if err != nil {
		return nil, err
	}
	return s, nil
}

// canonSlurm is [slurm] as written in the canonical form: the keys set.
type canonSlurm struct {
	Shards      int      `toml:"shards,omitzero"`
	Partition   string   `toml:"partition,omitempty"`
	Time        string   `toml:"time,omitempty"`
	CPUsPerTask int      `toml:"cpus_per_task,omitzero"`
	Mem         string   `toml:"mem,omitempty"`
	Account     string   `toml:"account,omitempty"`
	SbatchArgs  []string `toml:"sbatch_args,omitempty"`
}

func (s *Slurm) canon() *canonSlurm {
	if s == nil {
		return nil
	}
	c := canonSlurm{Shards: s.Shards, Partition: s.Partition, Time: s.Time, CPUsPerTask: s.CPUsPerTask,
		Mem: s.Mem, Account: s.Account, SbatchArgs: s.SbatchArgs}
	return &c
}
