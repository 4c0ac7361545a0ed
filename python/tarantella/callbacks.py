"""owned by the lead"""
