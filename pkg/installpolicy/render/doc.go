// Package render renders a guest chart as Helm would, client-only (render.go), within a budget of
// time, output and memory (budget.go): in a process of its own (process.go), the operator
// binary's render-chart command, which limits its own data to what it holds plus the budget
// (datalimit.go), so that a template that builds without end fails to allocate and ends with all
// it holds. A render that overran is refused with the same values until its back-off ends.
package render
