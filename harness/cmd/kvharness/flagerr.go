package main

import (
	"errors"
	"fmt"
	"math"
	"regexp"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/pflag"
)

// flagError turns one of pflag's errors into a line that names the flag,
// the value given and what would be accepted. pflag's own messages say
// what failed ("strconv.ParseInt: parsing ..."), not what to type.
func flagError(fs *pflag.FlagSet, err error) string {
	cmd := fs.Name()
	var (
		notExist *pflag.NotExistError
		required *pflag.ValueRequiredError
		invalid  *pflag.InvalidValueError
		syntax   *pflag.InvalidSyntaxError
		bad      *valueError
	)
	switch {
	case errors.As(err, &notExist):
		return unknownFlag(fs, notExist)
	case errors.As(err, &required):
		f := required.GetFlag()
		return fmt.Sprintf("%s: --%s needs a value, as in %s (kvharness %s --help lists the flags)", cmd, f.Name, example(f), cmd)
	case errors.As(err, &invalid) && errors.Is(err, errNotDecimal):
		f := invalid.GetFlag()
		return fmt.Sprintf("%s: --%s %q: want a whole number written in decimal, without a leading 0, 0x or 0o (nothing is read as octal or hex), as in %s",
			cmd, f.Name, invalid.GetValue(), example(f))
	case errors.As(err, &invalid):
		f := invalid.GetFlag()
		return fmt.Sprintf("%s: --%s %q: want %s, as in %s", cmd, f.Name, invalid.GetValue(), want(f), example(f))
	case errors.As(err, &syntax):
		return fmt.Sprintf("%s: bad flag syntax %q: write --name VALUE or --name=VALUE", cmd, syntax.GetSpecifiedFlag())
	case errors.As(err, &bad):
		return fmt.Sprintf("%s: --%s %s: %s", cmd, bad.flag.Name, bad.flag.Value.String(), bad.msg)
	}
	return fmt.Sprintf("%s: %v (kvharness %s --help lists the flags)", cmd, err, cmd)
}

func unknownFlag(fs *pflag.FlagSet, e *pflag.NotExistError) string {
	cmd := fs.Name()
	if short := e.GetSpecifiedShortnames(); short != "" {
		return fmt.Sprintf("%s: unknown flag -%s: flags are long, as in --%s (kvharness %s --help lists them)",
			cmd, short, firstFlag(fs), cmd)
	}
	name := e.GetSpecifiedName()
	var names []string
	fs.VisitAll(func(f *pflag.Flag) {
		if !f.Hidden {
			names = append(names, f.Name)
		}
	})
	if s := suggest(name, names); s != "" {
		return fmt.Sprintf("%s: unknown flag --%s; did you mean --%s?", cmd, name, s)
	}
	return fmt.Sprintf("%s: unknown flag --%s (kvharness %s --help lists the flags)", cmd, name, cmd)
}

func firstFlag(fs *pflag.FlagSet) string {
	name := "help"
	fs.VisitAll(func(f *pflag.Flag) {
		if name == "help" && !f.Hidden {
			name = f.Name
		}
	})
	return name
}

// want says in words what a flag of f's type accepts.
func want(f *pflag.Flag) string {
	switch f.Value.Type() {
	case "int", "int64", "int32", "uint", "uint64":
		return "a whole number"
	case "float64", "float32":
		return "a number"
	case "duration":
		return "a duration with a unit (300ms, 10s, 2m)"
	case "bool":
		return "true or false"
	case "intSlice":
		return "whole numbers, comma-separated"
	}
	return "a value of type " + f.Value.Type()
}

// example is a well-formed use of f: its default where it has one, else
// a value of its type.
func example(f *pflag.Flag) string {
	v := f.DefValue
	switch {
	case v == "" || v == "[]" || v == "0" || v == "0s":
		v = map[string]string{"int": "1", "int64": "1", "float64": "0.05", "duration": "10s", "stringSlice": "a,b"}[f.Value.Type()]
		if v == "" {
			v = strings.ToUpper(f.Name)
		}
	case strings.HasPrefix(v, "["):
		v = strings.Trim(v, "[]")
	}
	return "--" + f.Name + " " + v
}

// valueError is a value pflag accepted that no command means: NaN, a
// negative threshold, a zero timeout.
type valueError struct {
	flag *pflag.Flag
	msg  string
}

func (e *valueError) Error() string { return "--" + e.flag.Name + ": " + e.msg }

// Annotations a command puts on a flag to relax checkValues.
const (
	allowZero     = "kvharness-allow-zero"     // a zero duration means something (none, no limit)
	allowNegative = "kvharness-allow-negative" // a negative number means something
)

// checkValues refuses, for every flag given, the values that parse as
// their type but that no flag of this CLI means: a number that is NaN or
// infinite, a negative number where only thresholds and rates are taken,
// a duration of zero or less (every duration is a limit or a deadline).
// A flag annotated allowZero or allowNegative is let through.
func checkValues(fs *pflag.FlagSet) error {
	var err error
	fs.Visit(func(f *pflag.Flag) {
		if err == nil {
			err = checkValue(f)
		}
	})
	return err
}

func checkValue(f *pflag.Flag) error {
	_, zeroOK := f.Annotations[allowZero]
	_, negOK := f.Annotations[allowNegative]
	switch f.Value.Type() {
	case "float64", "float32":
		x, _ := strconv.ParseFloat(f.Value.String(), 64)
		switch {
		case math.IsNaN(x) || math.IsInf(x, 0):
			return &valueError{f, "want a finite number, as in " + example(f)}
		case x < 0 && !negOK:
			return &valueError{f, "want a number of at least 0, as in " + example(f)}
		}
	case "int", "int64", "int32":
		if x, _ := strconv.ParseInt(f.Value.String(), 10, 64); x < 0 && !negOK {
			return &valueError{f, "want 0 or more, as in " + example(f)}
		}
	case "duration":
		d, _ := time.ParseDuration(f.Value.String())
		switch {
		case d < 0 || d == 0 && !zeroOK:
			return &valueError{f, "want a positive duration, as in " + example(f)}
		}
	}
	return nil
}

// errNotDecimal is a whole number written other than in plain decimal:
// pflag reads 010 as octal and 0x10 as hex, which no one typing a count
// means.
var errNotDecimal = errors.New("not a decimal number")

// plainDecimal matches a whole number as people write one.
var plainDecimal = regexp.MustCompile(`^[+-]?(0|[1-9][0-9]*)$`)

// decimalValue is a whole-number flag's value that takes plain decimal
// only (see errNotDecimal).
type decimalValue struct{ pflag.Value }

func (d decimalValue) Set(s string) error {
	if !plainDecimal.MatchString(s) {
		return errNotDecimal
	}
	return d.Value.Set(s)
}

// decimalOnly makes every whole-number flag of fs take plain decimal.
func decimalOnly(fs *pflag.FlagSet) {
	fs.VisitAll(func(f *pflag.Flag) {
		switch f.Value.Type() {
		case "int", "int64", "int32", "uint", "uint64", "uint32":
			if _, done := f.Value.(decimalValue); !done {
				f.Value = decimalValue{f.Value}
			}
		}
	})
}

// suggest is the candidate closest to s by edit distance, if it is close
// enough to be a typo (two edits, or a third of its letters in a long
// name), else one that s begins, else "".
func suggest(s string, candidates []string) string {
	best, bestD := "", max(2, len(s)/3)+1
	for _, c := range candidates {
		if d := editDistance(s, c); d < bestD {
			best, bestD = c, d
		}
	}
	if best == "" && len(s) >= 3 {
		for _, c := range candidates {
			if strings.HasPrefix(c, s) {
				return c
			}
		}
	}
	return best
}

// editDistance is the Levenshtein distance between a and b.
func editDistance(a, b string) int {
	prev := make([]int, len(b)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(a); i++ {
		cur := make([]int, len(b)+1)
		cur[0] = i
		for j := 1; j <= len(b); j++ {
			cost := 1
			if a[i-1] == b[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
		}
		prev = cur
	}
	return prev[len(b)]
}
