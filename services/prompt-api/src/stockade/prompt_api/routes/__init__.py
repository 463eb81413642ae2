"""HTTP routes: parse, call one service function, shape the reply."""
