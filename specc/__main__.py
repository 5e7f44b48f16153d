from specc.cli import main

main()
