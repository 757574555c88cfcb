package reward
import ("testing";"fmt";"time")
func minTime(f func()) time.Duration { best := time.Hour; for i:=0;i<5;i++ { t0:=time.Now(); f(); if d:=time.Since(t0); d<best {best=d} }; return best }
func TestDbg(t *testing.T){
 for _, a := range adversarialInputs {
  for _, ref := range []string{a, "1", "x+1"} {
   d1 := minTime(func(){Grade(`\boxed{`+a+`}`, ref, strict)})
   d2 := minTime(func(){Grade(a, ref, rstar2)})
   d3 := minTime(func(){Kind(a)})
   d4 := minTime(func(){Canonical(a)})
   if d1+d2+d3+d4 > 5*time.Millisecond { s := a; if len(s) > 40 { s = s[:40] }; fmt.Printf("%-42q ref=%-6.6q %v %v %v %v\n", s, ref, d1, d2, d3, d4) }
  }
 }
}
