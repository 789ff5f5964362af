go test fuzz v1
string("hls")
string("0123abcd_full_7.ts")
