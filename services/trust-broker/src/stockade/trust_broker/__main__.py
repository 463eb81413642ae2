from stockade.trust_broker.main import main

main()
