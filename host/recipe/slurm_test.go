package recipe

import (
	"reflect"
	"strings"
	"testing"
)

// TestSlurm: [slurm] is optional (nil without it); given keys are read,
// round-trip through the canonical form and change no hash; bad values
// are errors that name the key, its line and what is accepted.
func TestSlurm(t *testing.T) {
	r, err := Parse("mini.toml", []byte(minimal), "")
	if err != nil {
		t.Fatal(err)
	}
	if r.Slurm != nil {
		t.Errorf("Slurm without [slurm]: %+v, want nil", r.Slurm)
	}
	if c := string(checkCanonical(t, r, "")); strings.Contains(c, "[slurm]") {
		t.Errorf("canonical form of a recipe without [slurm] has one:\n%s", c)
	}
	text := minimal + `
[slurm]
shards = 8
partition = "short,long"
time = "1-12:00:00"
cpus_per_task = 4
mem = "4G"
account = "proj-42"
sbatch_args = ["--qos=long", "--gres=gpu:1", "-q", "--mem-per-gpu=8G"]
`
	r2, err := Parse("slurm.toml", []byte(text), "")
	if err != nil {
		t.Fatal(err)
	}
	want := &Slurm{Shards: 8, Partition: "short,long", Time: "1-12:00:00", CPUsPerTask: 4, Mem: "4G", Account: "proj-42",
		SbatchArgs: []string{"--qos=long", "--gres=gpu:1", "-q", "--mem-per-gpu=8G"}}
	if !reflect.DeepEqual(r2.Slurm, want) {
		t.Errorf("slurm\n got %+v\nwant %+v", r2.Slurm, want)
	}
	if err := r2.Slurm.Validate(); err != nil {
		t.Errorf("Validate of a decoded table: %v", err)
	}
	c := string(checkCanonical(t, r2, ""))
	for _, w := range []string{"[slurm]", "shards = 8", `time = "1-12:00:00"`, `sbatch_args = ["--qos=long", "--gres=gpu:1", "-q", "--mem-per-gpu=8G"]`} {
		if !strings.Contains(c, w) {
			t.Errorf("canonical form lacks %s:\n%s", w, c)
		}
	}
	if r.Hash() != r2.Hash() || r.Hash(FitParts...) != r2.Hash(FitParts...) || r.Hash("posterior.0") != r2.Hash("posterior.0") {
		t.Error("[slurm] changes a hash; the Slurm settings never change a result")
	}
	// A table with only some keys keeps the others unset, and an empty
	// sbatch_args is the same as none (as the canonical form has it).
	r3, err := Parse("some.toml", []byte(minimal+"\n[slurm]\ntime = \"90\"\nsbatch_args = []\n"), "")
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(r3.Slurm, &Slurm{Time: "90"}) {
		t.Errorf("partial [slurm]: %+v", r3.Slurm)
	}
	checkCanonical(t, r3, "")
	// Every accepted time format.
	for _, tm := range []string{"90", "90:30", "1:30:00", "2-12", "2-12:30", "2-12:30:15", "UNLIMITED", "INFINITE"} {
		if err := CheckSlurmTime(tm); err != nil {
			t.Errorf("time %q: %v", tm, err)
		}
	}
	for _, m := range []string{"2000", "4G", "500M", "1T", "64K"} {
		if err := CheckSlurmMem(m); err != nil {
			t.Errorf("mem %q: %v", m, err)
		}
	}

	for _, c := range []struct {
		key, value string
		fragments  []string
	}{
		{"shards", `0`, []string{`key "shards" in [slurm]`, "0 is less than 1", ">= 1"}},
		{"shards", `"4"`, []string{`key "shards" in [slurm]`, "want an integer", `got string "4"`}},
		{"cpus_per_task", `-2`, []string{`key "cpus_per_task" in [slurm]`, "-2 is less than 1"}},
		{"time", `"1h"`, []string{`key "time" in [slurm]`, `"1h" is not a Slurm time limit`, `"HOURS:MINUTES:SECONDS"`, "UNLIMITED"}},
		{"time", `"1:2:3:4"`, []string{`key "time" in [slurm]`, "not a Slurm time limit"}},
		{"time", `90`, []string{`key "time" in [slurm]`, "want a string", "got integer 90"}},
		{"mem", `"4GB"`, []string{`key "mem" in [slurm]`, `"4GB" is not a Slurm memory size`, "K, M, G or T"}},
		{"mem", `"G"`, []string{`key "mem" in [slurm]`, "not a Slurm memory size"}},
		{"partition", `"a b"`, []string{`key "partition" in [slurm]`, `"a b" is not a partition name`, "comma-separated"}},
		{"partition", `"a,"`, []string{`key "partition" in [slurm]`, "not a partition name"}},
		{"account", `"x;rm"`, []string{`key "account" in [slurm]`, `"x;rm" is not an account name`}},
		{"account", `"a,b"`, []string{`key "account" in [slurm]`, "not an account name"}},
		{"sbatch_args", `"--qos=long"`, []string{`key "sbatch_args" in [slurm]`, "want an array of strings"}},
		{"sbatch_args", `["--qos=long", 3]`, []string{`element 1 of key "sbatch_args" in [slurm]`, "want a string, got integer 3"}},
		{"sbatch_args", `["qos=long"]`, []string{`element 0 of key "sbatch_args"`, `"qos=long" is not an sbatch option`, "starting with -"}},
		{"sbatch_args", `["--qos long"]`, []string{`element 0 of key "sbatch_args"`, "white space", "one option per element"}},
		{"sbatch_args", `["--x", "--array=0-3"]`, []string{`element 1 of key "sbatch_args"`, `"--array=0-3" sets --array, which uaxai sets itself`}},
		{"sbatch_args", `["-d", "afterok:1"]`, []string{`element 0 of key "sbatch_args"`, "sets --dependency"}},
		{"sbatch_args", `["-pdebug"]`, []string{`element 0 of key "sbatch_args"`, "sets --partition", "use the key or flag of its own"}},
		{"sbatch_args", `["--mem=4G"]`, []string{`element 0 of key "sbatch_args"`, "sets --mem"}},
		{"sbatch_args", `["--parsable"]`, []string{"sets --parsable"}},
		{"sbatch_args", `["--output=x"]`, []string{"sets --output"}},
		{"nodes", `2`, []string{`unknown key "nodes" in [slurm]`, "accepted: account, cpus_per_task, mem, partition, sbatch_args, shards, time"}},
		{"shard", `2`, []string{`unknown key "shard" in [slurm]`, `did you mean "shards"?`}},
	} {
		text := minimal + "\n[slurm]\n" + c.key + " = " + c.value + "\n"
		_, err := Parse("bad.toml", []byte(text), "")
		wantErr(t, err, lineOf(t, text, c.key+" = "), c.fragments...)
	}
	_, err = Parse("bad.toml", []byte("slurm = 3\n"+minimal), "")
	if err == nil || !strings.Contains(err.Error(), `key "slurm"`) || !strings.Contains(err.Error(), "line 1") {
		t.Errorf("slurm = 3: %v", err)
	}
	_, err = Parse("bad.toml", []byte(minimal+"[[slurm]]\nshards = 2\n"), "")
	if err == nil || !strings.Contains(err.Error(), "write [slurm], not [[slurm]]") {
		t.Errorf("[[slurm]]: %v", err)
	}
}

// TestSlurmValidate: Validate, which checks flags, accepts what the
// decoder accepts, and names the key of the first bad field.
func TestSlurmValidate(t *testing.T) {
	if err := (Slurm{}).Validate(); err != nil {
		t.Errorf("zero Slurm (every key unset): %v", err)
	}
	ok := Slurm{Shards: 1, CPUsPerTask: 1, Partition: "p", Time: "5", Mem: "1M", Account: "a", SbatchArgs: []string{"--qos=x"}}
	if err := ok.Validate(); err != nil {
		t.Errorf("least values: %v", err)
	}
	for _, c := range []struct {
		s    Slurm
		want string
	}{
		{Slurm{Shards: -1}, "slurm shards: -1 is less than 1"},
		{Slurm{CPUsPerTask: -1}, "slurm cpus_per_task: -1 is less than 1"},
		{Slurm{Partition: "a b"}, `slurm partition: "a b"`},
		{Slurm{Time: "soon"}, `slurm time: "soon"`},
		{Slurm{Mem: "lots"}, `slurm mem: "lots"`},
		{Slurm{Account: "a b"}, `slurm account: "a b"`},
		{Slurm{SbatchArgs: []string{"--qos=x", "-J", "name"}}, `slurm sbatch_args[1]: "-J" sets --job-name`},
	} {
		err := c.s.Validate()
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("Validate(%+v) = %v, want %q", c.s, err, c.want)
		}
	}
}

// TestSbatchArgsCannotRunCode: sbatch_args that would let a recipe run
// code of its choosing in the jobs (an environment variable set through
// --export, such as BASH_ENV, which bash sources before the script; an
// --export-file; a --container), or set an option uaxai sets through a
// prefix sbatch takes for it or a cluster of one-letter options, are
// refused with an error naming the key, the element and the argument and
// saying what is accepted; exporting variables of the submitting
// environment by name, and --get-user-env, are accepted.
func TestSbatchArgsCannotRunCode(t *testing.T) {
	for _, c := range []struct {
		arg  string
		want []string
	}{
		{"--export=ALL,BASH_ENV=/tmp/x.sh", []string{`exports "BASH_ENV=/tmp/x.sh"`, "--export=ALL, --export=NONE", "no NAME=VALUE"}},
		{"--export=LD_PRELOAD=/tmp/x.so", []string{`exports "LD_PRELOAD=/tmp/x.so"`}},
		{"--export=ENV=/tmp/x", []string{`exports "ENV=/tmp/x"`}},
		{"--export=NONE,LD_LIBRARY_PATH=/tmp", []string{`exports "LD_LIBRARY_PATH=/tmp"`}},
		{"--export", []string{"has no value", "in one element"}},
		{"--expor=ALL,BASH_ENV=/x", []string{`exports "BASH_ENV=/x"`}},
		{"--export-file=/tmp/env", []string{"sets --export-file", "run code", "accepted: any other sbatch option"}},
		{"--container=/tmp/bundle", []string{"sets --container", "run code"}},
		{"--dep=afterok:1", []string{"sets --dependency", "which uaxai sets itself"}},
		{"--out=/tmp/x", []string{"sets --output"}},
		{"-Hpdebug", []string{"cluster of one-letter options", `"-H" alone`}},
	} {
		text := minimal + "\n[slurm]\nsbatch_args = [\"--qos=long\", \"" + c.arg + "\"]\n"
		_, err := Parse("bad.toml", []byte(text), "")
		wantErr(t, err, lineOf(t, text, "sbatch_args = "), append([]string{`element 1 of key "sbatch_args" in [slurm]`, `"` + c.arg + `"`}, c.want...)...)
		if err := (Slurm{SbatchArgs: []string{c.arg}}).Validate(); err == nil || !strings.Contains(err.Error(), "sbatch_args[0]") {
			t.Errorf("Validate of %s (the --sbatch-arg flag): %v", c.arg, err)
		}
	}
	for _, a := range []string{"--export=ALL", "--export=NONE", "--export=NIL", "--export=ALL,HOME,SCRATCH", "--get-user-env", "--get-user-env=60L", "--qos=long", "-q", "-H", "--comment=a%b", "--mem-per-gpu=8G"} {
		if err := CheckSbatchArg(a); err != nil {
			t.Errorf("%s: %v", a, err)
		}
	}
}
