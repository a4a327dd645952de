package mirror
