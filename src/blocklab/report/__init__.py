"""The HTML report: the claims ledger on top, then the numbers and plots behind it (`build`)."""
