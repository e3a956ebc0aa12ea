// Package junit writes JUnit XML, the test report format CI systems read
// (Jenkins, GitLab, GitHub's test reporters, Buildkite): a testsuites
// element of testsuite elements, each of testcase elements that passed
// or hold a failure (the property was violated: the report is its body),
// an error (the run could not judge it: a plugin fault) or a skipped
// mark. kvharness check writes one test case per row, mutants one per
// control or mutant, fuzz one per fuzz target.
package junit

import (
	"bytes"
	"encoding/xml"
	"fmt"
	"os"
	"strings"
	"time"
)

// Suites is a whole report: the document's root.
type Suites struct {
	XMLName  xml.Name `xml:"testsuites"`
	Name     string   `xml:"name,attr"`
	Tests    int      `xml:"tests,attr"`
	Failures int      `xml:"failures,attr"`
	Errors   int      `xml:"errors,attr"`
	Skipped  int      `xml:"skipped,attr"`
	Time     Seconds  `xml:"time,attr"`
	Suites   []*Suite `xml:"testsuite"`
}

// Suite is one run of one command over one plugin.
type Suite struct {
	Name       string     `xml:"name,attr"`
	Tests      int        `xml:"tests,attr"`
	Failures   int        `xml:"failures,attr"`
	Errors     int        `xml:"errors,attr"`
	Skipped    int        `xml:"skipped,attr"`
	Time       Seconds    `xml:"time,attr"`
	Timestamp  string     `xml:"timestamp,attr,omitempty"`
	Hostname   string     `xml:"hostname,attr,omitempty"`
	Properties []Property `xml:"properties>property,omitempty"`
	Cases      []Case     `xml:"testcase"`
}

// Property is a setting of the run a suite records (seed, backend).
type Property struct {
	Name  string `xml:"name,attr"`
	Value string `xml:"value,attr"`
}

// Case is one test case: a row, a subject, a target.
type Case struct {
	Name      string  `xml:"name,attr"`
	Classname string  `xml:"classname,attr"`
	Time      Seconds `xml:"time,attr"`
	Failure   *Result `xml:"failure,omitempty"`
	Error     *Result `xml:"error,omitempty"`
	Skipped   *Result `xml:"skipped,omitempty"`
	SystemOut string  `xml:"system-out,omitempty"`
}

// Result is a case's failure, error or skip: a one-line message, a type
// (the property, the fault's kind) and the whole report as its body.
type Result struct {
	Message string `xml:"message,attr"`
	Type    string `xml:"type,attr,omitempty"`
	Body    string `xml:",cdata"` // as written, line breaks and all; see xmlText
}

// Seconds is a duration as JUnit writes it: seconds, three decimals.
type Seconds time.Duration

// MarshalXMLAttr writes the seconds.
func (s Seconds) MarshalXMLAttr(name xml.Name) (xml.Attr, error) {
	return xml.Attr{Name: name, Value: fmt.Sprintf("%.3f", time.Duration(s).Seconds())}, nil
}

// NewSuite starts a suite named name, stamped now with this host.
func NewSuite(name string, start time.Time) *Suite {
	host, _ := os.Hostname()
	return &Suite{Name: name, Timestamp: start.UTC().Format("2006-01-02T15:04:05"), Hostname: host}
}

// Add appends a case and counts it.
func (s *Suite) Add(c Case) {
	s.Cases = append(s.Cases, c)
	s.Tests++
	switch {
	case c.Failure != nil:
		s.Failures++
	case c.Error != nil:
		s.Errors++
	case c.Skipped != nil:
		s.Skipped++
	}
}

// Encode is the document of suites named name, its totals summed.
func Encode(name string, suites ...*Suite) ([]byte, error) {
	all := Suites{Name: name, Suites: suites}
	for _, s := range suites {
		all.Tests += s.Tests
		all.Failures += s.Failures
		all.Errors += s.Errors
		all.Skipped += s.Skipped
		all.Time += s.Time
	}
	for _, s := range suites {
		for i := range s.Cases {
			c := &s.Cases[i]
			for _, r := range []*Result{c.Failure, c.Error, c.Skipped} {
				if r != nil {
					r.Body = xmlText(r.Body)
				}
			}
			c.SystemOut = xmlText(c.SystemOut)
		}
	}
	var b bytes.Buffer
	b.WriteString(xml.Header)
	enc := xml.NewEncoder(&b)
	enc.Indent("", "  ")
	if err := enc.Encode(all); err != nil {
		return nil, err
	}
	b.WriteByte('\n')
	return b.Bytes(), nil
}

// xmlText replaces what XML 1.0 cannot hold at all (control characters
// other than tab and line breaks, a go test log's escapes) with U+FFFD:
// a report is text, and one stray byte must not make the file unreadable.
func xmlText(s string) string {
	return strings.Map(func(r rune) rune {
		switch {
		case r == '\t' || r == '\n' || r == '\r':
			return r
		case r < 0x20, r == 0xFFFE, r == 0xFFFF, r >= 0xD800 && r <= 0xDFFF:
			return '\uFFFD'
		}
		return r
	}, s)
}
