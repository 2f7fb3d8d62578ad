from trtbench.cli import main

raise SystemExit(main())
