"""regression"""
