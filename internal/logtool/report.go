package logtool

import (
	"encoding/json"
	"fmt"
	"io"
)

type findingJSON struct {
	Kind           string `json:"kind"` // "finding"
	Partition      string `json:"partition"`
	Finding        string `json:"finding"`
	Severity       string `json:"severity"`
	ProducerID     int64  `json:"producer_id"`
	Offset         int64  `json:"offset"`
	PreviousOffset int64  `json:"previous_offset"`
	File           string `json:"file"`
	Position       int64  `json:"position"`
	Detail         string `json:"detail"`
	Why            string `json:"why"`
}

type summaryJSON struct {
	Kind       string         `json:"kind"` // "summary"
	Partition  string         `json:"partition"`
	Segments   int            `json:"segments"`
	Batches    int            `json:"batches"`
	Barriers   int            `json:"barriers"`
	Findings   int            `json:"findings"`
	BySeverity map[string]int `json:"by_severity"`
	TornTail   *damageJSON    `json:"torn_tail,omitempty"`
}

// WriteReport prints a partition's findings and a summary, as text or as
// one JSON object per line.
func WriteReport(w io.Writer, p Partition, v *Verifier, asJSON bool) error {
	sev := map[string]int{}
	for _, f := range v.Findings {
		sev[f.Kind.Severity]++
	}
	if asJSON {
		enc := json.NewEncoder(w)
		for _, f := range v.Findings {
			if err := enc.Encode(findingJSON{Kind: "finding", Partition: p.Name, Finding: f.Kind.Name,
				Severity: f.Kind.Severity, ProducerID: f.ProducerID, Offset: f.Offset, PreviousOffset: f.PreviousOffset,
				File: f.File, Position: f.Position, Detail: f.Detail, Why: f.Kind.Why}); err != nil {
				return err
			}
		}
		s := summaryJSON{Kind: "summary", Partition: p.Name, Segments: len(p.Segments), Batches: v.Batches,
			Barriers: v.Barriers, Findings: len(v.Findings), BySeverity: sev}
		if t := v.TornTail; t != nil {
			s.TornTail = &damageJSON{Kind: "damage", File: p.Segments[len(p.Segments)-1], Position: t.Position,
				Reason: t.Reason, Remaining: t.Remaining, TornTail: true}
		}
		return enc.Encode(s)
	}
	for _, f := range v.Findings {
		prev := ""
		if f.PreviousOffset >= 0 {
			prev = fmt.Sprintf(" (previous batch of this producer id at offset %d)", f.PreviousOffset)
		}
		if _, err := fmt.Fprintf(w, "%s: offset %d producerId %d: %s [%s]: %s%s\n    at %s position %d\n    why: %s\n",
			p.Name, f.Offset, f.ProducerID, f.Kind.Name, f.Kind.Severity, f.Detail, prev, f.File, f.Position, f.Kind.Why); err != nil {
			return err
		}
	}
	status := "clean"
	if len(v.Findings) > 0 {
		status = fmt.Sprintf("%d findings (%d impossible, %d suspicious, %d damage)", len(v.Findings),
			sev[SeverityImpossible], sev[SeveritySuspicious], sev[SeverityDamage])
	}
	if _, err := fmt.Fprintf(w, "%s: %d segments, %d batches, %d MIRROR_PID_RESET barriers: %s\n",
		p.Name, len(p.Segments), v.Batches, v.Barriers, status); err != nil {
		return err
	}
	if t := v.TornTail; t != nil {
		_, err := fmt.Fprintf(w, "%s: note: the last segment ends in a partial batch at %s (a crash, or a write in progress)\n", p.Name, t)
		return err
	}
	return nil
}
