package archive

import "testing"

// TestTextCell checks every character of formulaStarts one by one, each
// written out here (not read from the constant, so a character dropped
// from it fails), at the start of a cell and elsewhere.
func TestTextCell(t *testing.T) {
	t.Parallel()
	for _, c := range []string{"=", "+", "-", "@", "\t", "\r", "＝", "＋", "－", "＠"} {
		for _, cell := range []string{c, c + "SUM(A1:A9)", c + "1+1"} {
			if got, want := textCell(cell), "'"+cell; got != want {
				t.Errorf("textCell(%q) = %q, want %q", cell, got, want)
			}
		}
		if got, want := textCell("soup "+c+" bread"), "soup "+c+" bread"; got != want {
			t.Errorf("textCell(%q) = %q, want it unchanged (not at the start)", want, got)
		}
	}
	if n := len([]rune(formulaStarts)); n != 10 {
		t.Errorf("formulaStarts holds %d characters, this test checks 10: add the new ones above", n)
	}
	for _, cell := range []string{"", "soup", "1", "'=already", " =x", "\n=x", "#1", "%", "÷", "ー", "\u00a0=x"} {
		if got := textCell(cell); got != cell {
			t.Errorf("textCell(%q) = %q, want it unchanged", cell, got)
		}
	}
}
