// Package render renders a guest chart as Helm would, client-only (render.go), within a budget of
// time, output and memory (budget.go): in a process of its own (process.go), the operator
// binary's render-chart command (Serve), handed the chart, the values and the budget on stdin.
// That process limits its own data (RLIMIT_DATA) to what it holds plus the budget's memory
// (datalimit.go), so a template that builds without end fails to allocate and the process ends;
// one that runs too long is killed. Either way what it held goes with it, and the operator's
// memory never sees it. A render that overran is refused with the same values until its back-off
// ends.
package render
