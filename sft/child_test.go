package sft
const childEnv = "GORSTAR_SFT_CHILD"
func runChild() int { return 0 }
