/*
 * fairshare_driver - runs sim_fairshare_main() the way `muster-sim
 * --fairshare TREE.json` does, so the calculator is tested end to end
 * (exit status, stdout, stderr) independently of the simulator's main.
 */
#include <stdio.h>

#include "fairshare_cli.h"

int main(int argc, char **argv)
{
	if (argc != 2) {
		fprintf(stderr, "usage: %s TREE.json|-\n", argv[0]);
		return 2;
	}
	return sim_fairshare_main(argv[1], stdout);
}
