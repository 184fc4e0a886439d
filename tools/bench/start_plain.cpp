// uwjit-bench-start-plain: a trivial program, the baseline of the start-up measurement.
int main() {
  return 0;
}
